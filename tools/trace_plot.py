#!/usr/bin/env python3
"""Render a streamexecutor trace (Chrome trace-event JSON) as a PNG timeline.

Usage: trace_plot.py TRACE.json -o OUT.png [--title T] [--width INCHES]
                     [--start US --end US] [--dpi N] [--no-labels]
                     [--layout-json FILE|-]

One lane per stream (pid, tid), grouped by executor (pid) under its process
name; complete events ("X") are bars colored by their category (the operation
kind), instant events ("i"/"I") thin ticks, flows ("s" -> "f") arrows from the
recorded event to the wait. --start/--end are microseconds from the trace's
first operation, the zero of the time axis. --layout-json writes the lanes,
the color map and the data-to-pixel transform, for tests and other tools.
The format is described in docs/tracing.md ("Rendering a trace").

Exit status: 0 drawn (warnings about skipped events go to stderr), 1 when the
input or output cannot be used, 2 for bad arguments."""

import argparse
import importlib.util
import json
import math
import os
import sys

KIND_COLORS = {
    'launch': '#1f77b4',
    'memcpy_h2d': '#2ca02c',
    'memcpy_d2h': '#ff7f0e',
    'memcpy_d2d': '#bcbd22',
    'memset': '#17becf',
    'host_callback': '#9467bd',
    'wait': '#d62728',
    'record_event': '#e377c2',
    'canned': '#8c564b',
    'command_buffer': '#393b79',
    'allocation': '#e6ab02',
}
# Grays are kept for kinds this tool does not know, so that a new kind from a
# newer recorder is visibly "other" rather than mistaken for a known one.
UNKNOWN_COLORS = ['#9e9e9e', '#c7c7c7', '#6b6b6b', '#b3b3b3', '#858585']
NO_CATEGORY = 'uncategorized'
FLOW_COLOR = '#000000'
GROUP_SHADES = ['#ffffff', '#f2f2f2']

LANE_HEIGHT = 0.8    # of the 1.0 a lane takes on the y axis
GROUP_GAP = 0.9      # room above each process for its name
MAX_PROBLEMS_SHOWN = 3


class InputError(Exception):
    pass


def is_number(value):
    # bool is an int to Python but never a time in a trace.
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond a double
        return False


def is_id(value):
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def id_sort_key(value):
    # pids and tids are usually ints, but Chrome's format allows strings:
    # keep mixed traces sortable.
    return (0, value, '') if isinstance(value, int) else (1, 0, str(value))


def load_events(path):
    try:
        with open(path, 'rb') as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f'cannot read: {e.strerror}') from None
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        raise InputError(f'not UTF-8 text (byte {e.start})') from None
    if not text.strip():
        raise InputError('empty file')
    try:
        top = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f'not valid JSON: line {e.lineno} column {e.colno}: {e.msg}') from None
    except RecursionError:
        raise InputError('not usable JSON: nested too deeply') from None
    if isinstance(top, list):
        return top, {}
    if not isinstance(top, dict):
        raise InputError(f'the top level is a JSON {type(top).__name__}; expected an object with '
                         '"traceEvents" or an array of events')
    if 'traceEvents' not in top:
        raise InputError('no "traceEvents" in the top-level object')
    events = top['traceEvents']
    if not isinstance(events, list):
        raise InputError(f'"traceEvents" is a JSON {type(events).__name__}, not an array')
    other = top.get('otherData')
    return events, other if isinstance(other, dict) else {}


class Trace:
    def __init__(self):
        self.process_names = {}
        self.thread_names = {}
        self.process_sort = {}
        self.thread_sort = {}
        self.ops = []        # (pid, tid, ts, dur, kind, name)
        self.instants = []   # (pid, tid, ts, kind, name)
        self.flows = []      # ((pid, tid, ts), (pid, tid, ts))
        self.problems = []   # skipped events, for the warning
        self.flow_problems = []


def missing_fields(event, fields):
    bad = []
    for field, check in fields:
        if field not in event:
            bad.append(f"no '{field}'")
        elif not check(event[field]):
            bad.append(f"bad '{field}' {json.dumps(event[field])[:40]}")
    return bad


def parse(events):
    trace = Trace()
    starts = {}
    ends = {}
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            trace.problems.append(f'event {index}: not an object')
            continue
        ph = event.get('ph')
        where = f"event {index} (ph {json.dumps(ph)})"
        if ph == 'M':
            name = event.get('name')
            args = event.get('args') if isinstance(event.get('args'), dict) else {}
            pid, tid = event.get('pid'), event.get('tid')
            if name == 'process_name' and is_id(pid) and isinstance(args.get('name'), str):
                trace.process_names[pid] = args['name']
            elif name == 'thread_name' and is_id(pid) and is_id(tid) and isinstance(args.get('name'), str):
                trace.thread_names[(pid, tid)] = args['name']
            elif name == 'process_sort_index' and is_id(pid) and is_number(args.get('sort_index')):
                trace.process_sort[pid] = args['sort_index']
            elif name == 'thread_sort_index' and is_id(pid) and is_id(tid) and is_number(args.get('sort_index')):
                trace.thread_sort[(pid, tid)] = args['sort_index']
            continue
        if ph == 'X':
            bad = missing_fields(event, [('pid', is_id), ('tid', is_id), ('ts', is_number),
                                         ('dur', lambda d: is_number(d) and d >= 0)])
            if bad:
                trace.problems.append(f"{where}: {', '.join(bad)}")
                continue
            trace.ops.append((event['pid'], event['tid'], float(event['ts']), float(event['dur']),
                              kind_of(event), str(event.get('name', ''))))
        elif ph in ('i', 'I'):
            bad = missing_fields(event, [('pid', is_id), ('tid', is_id), ('ts', is_number)])
            if bad:
                trace.problems.append(f"{where}: {', '.join(bad)}")
                continue
            trace.instants.append((event['pid'], event['tid'], float(event['ts']), kind_of(event),
                                   str(event.get('name', ''))))
        elif ph in ('s', 'f'):
            bad = missing_fields(event, [('id', is_id), ('pid', is_id), ('tid', is_id), ('ts', is_number)])
            if bad:
                trace.problems.append(f"{where}: {', '.join(bad)}")
                continue
            # Chrome binds a flow's ends by id within a category.
            key = (str(event.get('cat', '')), event['id'])
            point = (event['pid'], event['tid'], float(event['ts']))
            (starts if ph == 's' else ends).setdefault(key, []).append(point)
    pair_flows(trace, starts, ends)
    return trace


def pair_flows(trace, starts, ends):
    # An id may be reused once its flow has ended, so each end takes the
    # latest start at or before it that no other end has taken. Clocks of
    # two backends may disagree a little: failing that, a later start.
    for key in sorted(set(starts) | set(ends), key=lambda k: (k[0], id_sort_key(k[1]))):
        pending = sorted(starts.get(key, []), key=lambda p: p[2])
        for end in sorted(ends.get(key, []), key=lambda p: p[2]):
            if not pending:
                trace.flow_problems.append(f'flow id {json.dumps(key[1])}: an end at ts {end[2]:.3f} '
                                           'with no start')
                continue
            candidates = [i for i, s in enumerate(pending) if s[2] <= end[2]]
            trace.flows.append((pending.pop(candidates[-1] if candidates else 0), end))
        for start in pending:
            trace.flow_problems.append(f'flow id {json.dumps(key[1])}: a start at ts {start[2]:.3f} '
                                       'with no end')


def kind_of(event):
    cat = event.get('cat')
    return cat if isinstance(cat, str) and cat else NO_CATEGORY


def color_map(kinds):
    colors = {}
    unknown = 0
    for kind in sorted(kinds, key=lambda k: (k not in KIND_COLORS, list(KIND_COLORS).index(k)
                                             if k in KIND_COLORS else 0, k)):
        if kind in KIND_COLORS:
            colors[kind] = KIND_COLORS[kind]
        else:
            colors[kind] = UNKNOWN_COLORS[unknown % len(UNKNOWN_COLORS)]
            unknown += 1
    return colors


def lane_layout(trace):
    """Lanes top to bottom: [(pid, tid, y_top)] and process headers [(pid, y_of_name, y_top, y_bottom)]."""
    keys = {(p, t) for p, t, *_ in trace.ops} | {(p, t) for p, t, *_ in trace.instants}
    for start, end in trace.flows:
        keys.add(start[:2])
        keys.add(end[:2])
    by_pid = {}
    for pid, tid in keys:
        by_pid.setdefault(pid, []).append(tid)
    pids = sorted(by_pid, key=lambda p: (trace.process_sort.get(p, 0), id_sort_key(p)))
    lanes, groups = [], []
    y = 0.0
    for pid in pids:
        group_top = y
        y += GROUP_GAP
        tids = sorted(by_pid[pid], key=lambda t: (trace.thread_sort.get((pid, t), 0), id_sort_key(t)))
        for tid in tids:
            lanes.append((pid, tid, y))
            y += 1.0
        groups.append((pid, group_top + GROUP_GAP * 0.55, group_top, y))
    return lanes, groups, y


def lane_label(trace, pid, tid):
    return trace.thread_names.get((pid, tid), f'pid {pid} tid {tid}')


def process_label(trace, pid):
    return trace.process_names.get(pid, f'pid {pid}')


def render(trace, other, args, trace_path):
    import matplotlib
    matplotlib.use('Agg')
    # Names come from the program traced: a '$' in one is text, not TeX.
    matplotlib.rcParams['text.parse_math'] = False
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.patches import FancyArrowPatch, Patch
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    times = [ts for _, _, ts, *_ in trace.ops] + [ts for _, _, ts, *_ in trace.instants]
    origin = min(times)
    flow_times = [point[2] for flow in trace.flows for point in flow]
    # Flows count for the extent so that no arrow points out of the picture.
    first = min(times + flow_times) - origin
    last = max([ts + dur for _, _, ts, dur, *_ in trace.ops] + times + flow_times)
    span = last - origin
    if not math.isfinite(span) or not math.isfinite(first):
        raise InputError('the times are too large to draw')
    if args.start is not None or args.end is not None:
        x0 = args.start if args.start is not None else 0.0
        x1 = args.end if args.end is not None else span
        if x1 <= x0:
            raise InputError(f'the window [{x0:g}, {x1:g}] us is empty')
        ops = [o for o in trace.ops if o[2] - origin < x1 and o[2] + o[3] - origin > x0]
        instants = [i for i in trace.instants if x0 <= i[2] - origin <= x1]
        if not ops and not instants:
            raise InputError(f'no operations between {x0:g} and {x1:g} us after the first one '
                             f'(the trace spans {span:g} us)')
    else:
        # A little room so that the first and last bars do not touch the frame.
        pad = max((span - first) * 0.01, 0.5)
        x0, x1 = first - pad, span + pad
        ops, instants = trace.ops, trace.instants

    lanes, groups, total_height = lane_layout(trace)
    lane_y = {(pid, tid): y for pid, tid, y in lanes}
    kinds = {o[4] for o in trace.ops} | {i[3] for i in trace.instants}
    colors = color_map(kinds)

    width = args.width
    height = min(1.3 + 0.32 * total_height + 0.28 * math.ceil(len(colors) / 6), 60.0)
    fig = Figure(figsize=(width, height), dpi=args.dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_ylim(total_height, 0)
    ax.set_xlim(x0, x1)
    window = x1 - x0
    if window >= 2000:
        unit, scale = 'ms', 1e-3
    else:
        unit, scale = 'µs', 1.0
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f'{v * scale:g}'))
    ax.set_xlabel(f'time since the first operation ({unit})')
    ax.set_yticks([y + 0.5 for _, _, y in lanes])
    ax.set_yticklabels([lane_label(trace, pid, tid) for pid, tid, _ in lanes])
    ax.tick_params(axis='y', length=0)
    ax.grid(axis='x', color='#dddddd', linewidth=0.6)
    ax.set_axisbelow(True)
    for i, (pid, y_name, top, bottom) in enumerate(groups):
        ax.axhspan(top, bottom, color=GROUP_SHADES[i % 2], zorder=0)
        ax.text(0.005, y_name, process_label(trace, pid), transform=ax.get_yaxis_transform(),
                fontweight='bold', fontsize=9, va='center', ha='left', clip_on=True)
        if i:
            ax.axhline(top, color='#999999', linewidth=0.8)

    title = args.title
    if title is None:
        title = os.path.basename(trace_path)
        version = other.get('streamexecutor')
        if isinstance(version, str):
            title += f' (streamexecutor {version})'
    ax.set_title(title)
    handles = [Patch(facecolor=c, edgecolor='none', label=k) for k, c in colors.items()]
    if trace.flows:
        handles.append(Patch(facecolor=FLOW_COLOR, label='→ wait on an event (flow)'))
    # Below the time axis's label: about 0.5 in, as a fraction of the axes.
    ax.legend(handles=handles, loc='upper center', bbox_to_anchor=(0.5, -0.5 / max(height - 1.3, 0.5)),
              ncol=min(6, len(handles)), fontsize=8, frameon=False)
    fig.tight_layout()

    # Bars under a pixel wide would vanish; widen them to one pixel of the axes.
    axes_px = ax.get_window_extent().width
    min_width = window / max(axes_px, 1.0)
    verts = {}
    for pid, tid, ts, dur, kind, _ in ops:
        y = lane_y[(pid, tid)] + (1 - LANE_HEIGHT) / 2
        left = ts - origin
        right = left + max(dur, min_width)
        verts.setdefault(kind, []).append([(left, y), (right, y), (right, y + LANE_HEIGHT),
                                           (left, y + LANE_HEIGHT)])
    for kind, polys in verts.items():
        ax.add_collection(PolyCollection(polys, facecolors=colors[kind], edgecolors='none',
                                         linewidths=0, antialiaseds=False, zorder=2))
    ticks = {}
    for pid, tid, ts, kind, _ in instants:
        y = lane_y[(pid, tid)]
        ticks.setdefault(kind, []).append([(ts - origin, y + 0.05), (ts - origin, y + 0.95)])
    for kind, segments in ticks.items():
        ax.add_collection(LineCollection(segments, colors=colors[kind], linewidths=1.2, zorder=3))

    if args.labels:
        draw_labels(ax, ops, lane_y, origin, window / max(axes_px, 1.0), x0, x1)

    for start, end in trace.flows:
        a = (start[2] - origin, lane_y[start[:2]] + 0.5)
        b = (end[2] - origin, lane_y[end[:2]] + 0.5)
        if a == b:
            continue
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle='-|>', mutation_scale=9, color=FLOW_COLOR,
                                     linewidth=1.0, shrinkA=0, shrinkB=0, zorder=4))

    try:
        fig.savefig(args.output, dpi=args.dpi, format='png')
    except OSError as e:
        raise InputError(f'cannot write {args.output}: {e.strerror or e}') from None
    if args.layout_json:
        write_layout(args.layout_json, fig, ax, trace, lanes, colors, origin, unit, (x0, x1))


def draw_labels(ax, ops, lane_y, origin, us_per_px, x0, x1):
    # Names only where they fit (about 6 px a character at 7 pt), and not so
    # many that a large trace turns into text.
    # Overlapping operations on one stream would put names over each other:
    # the longest one of them is named.
    taken = {}
    for pid, tid, ts, dur, _, name in sorted(ops, key=lambda o: -o[3]):
        left, right = max(ts - origin, x0), min(ts - origin + dur, x1)
        if not name or (right - left) / us_per_px < 6 * len(name) + 8 or sum(map(len, taken.values())) >= 300:
            continue
        spans = taken.setdefault((pid, tid), [])
        if any(left < r and l < right for l, r in spans):
            continue
        spans.append((left, right))
        ax.text((left + right) / 2, lane_y[(pid, tid)] + 0.5, name, ha='center', va='center',
                fontsize=7, color='white', zorder=3, clip_on=True)


def write_layout(path, fig, ax, trace, lanes, colors, origin, unit, xlim):
    width_px, height_px = fig.canvas.get_width_height()
    # Display coordinates start at the bottom left; PNG rows start at the top.
    (px0, py0), (px1, py1) = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])
    ax_box = ax.get_window_extent()
    layout = {
        'image': {'width': width_px, 'height': height_px, 'dpi': fig.dpi},
        'origin_us': origin,
        'unit': unit,
        'xlim_us': list(xlim),
        'transform': {
            'about': 'pixel column = x[0] * (ts - origin_us) + x[1]; pixel row = y[0] * lane_y + y[1]',
            'x': [px1 - px0, px0],
            'y': [-(py1 - py0), height_px - py0],
        },
        'axes_pixels': {'left': ax_box.x0, 'right': ax_box.x1,
                        'top': height_px - ax_box.y1, 'bottom': height_px - ax_box.y0},
        'lanes': [{'pid': pid, 'tid': tid, 'process': process_label(trace, pid),
                   'label': lane_label(trace, pid, tid),
                   'y_top': y, 'y_bottom': y + 1.0,
                   'bar_top': y + (1 - LANE_HEIGHT) / 2, 'bar_bottom': y + (1 + LANE_HEIGHT) / 2}
                  for pid, tid, y in lanes],
        'colors': colors,
        'flow_color': FLOW_COLOR,
        'flows': len(trace.flows),
    }
    text = json.dumps(layout, indent=1) + '\n'
    if path == '-':
        sys.stdout.write(text)
        return
    try:
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
    except OSError as e:
        raise InputError(f'cannot write {path}: {e.strerror}') from None


def warn(prog, trace_path, what, items):
    shown = '; '.join(items[:MAX_PROBLEMS_SHOWN])
    more = f' (and {len(items) - MAX_PROBLEMS_SHOWN} more)' if len(items) > MAX_PROBLEMS_SHOWN else ''
    print(f'{prog}: {trace_path}: {what}: {shown}{more}', file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='trace_plot.py', description=__doc__.split('\n\n')[0])
    parser.add_argument('trace', metavar='TRACE.json')
    parser.add_argument('-o', '--output', required=True, metavar='OUT.png')
    parser.add_argument('--title')
    parser.add_argument('--width', type=float, default=12.0, metavar='INCHES')
    parser.add_argument('--dpi', type=float, default=100.0)
    parser.add_argument('--start', type=float, metavar='US', help='from this many us after the first operation')
    parser.add_argument('--end', type=float, metavar='US', help='to this many us after the first operation')
    parser.add_argument('--labels', action=argparse.BooleanOptionalAction, default=True,
                        help='operation names inside bars wide enough for them (default: on)')
    parser.add_argument('--layout-json', metavar='FILE', help="lanes, colors and pixel transform as JSON ('-': stdout)")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.width) and 1.0 <= args.width <= 200.0):
        parser.error('--width must be between 1 and 200 inches')
    if not (math.isfinite(args.dpi) and 10.0 <= args.dpi <= 1000.0):
        parser.error('--dpi must be between 10 and 1000')
    for name in ('start', 'end'):
        value = getattr(args, name)
        if value is not None and not math.isfinite(value):
            parser.error(f'--{name} must be a finite number')

    prog = parser.prog
    try:
        events, other = load_events(args.trace)
        trace = parse(events)
        if trace.problems:
            warn(prog, args.trace, f'skipped {len(trace.problems)} of {len(events)} events', trace.problems)
        if trace.flow_problems:
            warn(prog, args.trace, f'{len(trace.flow_problems)} unmatched flow end(s), not drawn',
                 trace.flow_problems)
        if not trace.ops and not trace.instants:
            raise InputError(f'nothing to draw: no operations (complete "X" or instant "i" events with '
                             f'pid, tid, ts) among {len(events)} events')
        if importlib.util.find_spec('matplotlib') is None:
            print(f'{prog}: matplotlib is not installed for {sys.executable} '
                  '(Debian: apt-get install python3-matplotlib)', file=sys.stderr)
            return 1
        render(trace, other, args, args.trace)
    except InputError as e:
        print(f'{prog}: {args.trace}: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
