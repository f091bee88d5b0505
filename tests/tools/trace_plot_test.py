#!/usr/bin/env python3
"""Tests of tools/trace_plot.py on synthetic traces: the image's size, each
kind's color where its bar is, the flow arrow, the lanes, and a clear message
(no traceback) for every kind of bad input.

Usage: trace_plot_test.py TOOL. Exits 77 (skipped) when this
Python has no matplotlib, as the tool could not run."""

import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib.image
except ImportError:
    print(f'SKIP: matplotlib is not installed for {sys.executable} (Debian: python3-matplotlib)')
    sys.exit(77)

TOOL = os.path.abspath(sys.argv[1])
KINDS = ['launch', 'memcpy_h2d', 'memcpy_d2h', 'memcpy_d2d', 'memset', 'host_callback', 'wait',
         'record_event', 'canned', 'command_buffer', 'allocation', 'mystery_kind']
T0 = 1_700_000_000.0  # microseconds, as a steady clock gives them: far from zero
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f'FAIL: {what}')


def run(workdir, trace, *extra, name='trace.json'):
    path = os.path.join(workdir, name)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(trace if isinstance(trace, str) else json.dumps(trace))
    out = os.path.join(workdir, name + '.png')
    if os.path.exists(out):
        os.remove(out)
    result = subprocess.run([sys.executable, TOOL, path, '-o', out, *extra],
                            capture_output=True, text=True, timeout=120)
    return result, out


def meta(ph_name, pid, tid, value):
    event = {'ph': 'M', 'name': ph_name, 'pid': pid, 'args': {'name': value}}
    if tid is not None:
        event['tid'] = tid
    return event


def synthetic(with_flows=True):
    """2 executors, 3 streams; each kind's bar 100 us wide at a known place."""
    events = [meta('process_name', 1, None, 'opencl:0 (pthread-test)'),
              meta('process_name', 2, None, 'host:0'),
              meta('thread_name', 1, 10, "stream 1 'decode'"),
              meta('thread_name', 1, 11, "stream 2 'compute'"),
              # pid 2 tid 20 has no name: the fallback label.
              {'ph': 'M', 'name': 'thread_sort_index', 'pid': 1, 'tid': 10, 'args': {'sort_index': 0}},
              {'ph': 'C', 'name': 'bytes', 'pid': 1, 'ts': T0, 'args': {'h2d': 10}}]
    bars = []
    lanes = [(1, 10), (1, 11), (2, 20)]
    for i, kind in enumerate(KINDS):
        pid, tid = lanes[i % 3]
        ts = T0 + 200.0 * i
        events.append({'ph': 'X', 'name': f'{kind} op', 'cat': kind, 'pid': pid, 'tid': tid, 'ts': ts,
                       'dur': 100.0, 'args': {'bytes': 64}})
        bars.append((kind, pid, tid, ts))
    instant = {'ph': 'i', 's': 't', 'name': 'launch tick', 'cat': 'launch', 'pid': 2, 'tid': 20,
               'ts': T0 + 2550.0}
    events.append(instant)
    # The flow crosses pids through a stretch of lane 1:11 that has no bar, so
    # that its middle is drawn on the background.
    flow = [{'ph': 's', 'id': 7, 'cat': 'event', 'name': 'event', 'pid': 1, 'tid': 10, 'ts': T0 + 2500.0},
            {'ph': 'f', 'bp': 'e', 'id': 7, 'cat': 'event', 'name': 'event', 'pid': 2, 'tid': 20,
             'ts': T0 + 2700.0}]
    if with_flows:
        events += flow
    return {'traceEvents': events, 'displayTimeUnit': 'ns', 'otherData': {'streamexecutor': 'test'}}, bars, \
        instant, flow


def pixel(image, layout, ts, lane_y):
    tx, ty = layout['transform']['x'], layout['transform']['y']
    col = tx[0] * (ts - layout['origin_us']) + tx[1]
    row = ty[0] * lane_y + ty[1]
    return int(row), int(col)


def rgb(hex_color):
    return [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]


def distance(a, b):
    return max(abs(float(x) - float(y)) for x, y in zip(a[:3], b[:3]))


def test_render(workdir):
    trace, bars, instant, flow = synthetic()
    layout_path = os.path.join(workdir, 'layout.json')
    result, out = run(workdir, trace, '--width', '10', '--dpi', '80', '--no-labels', '--layout-json', layout_path)
    check(result.returncode == 0, f'a good trace renders (rc {result.returncode}: {result.stderr.strip()})')
    if result.returncode != 0:
        return
    check(result.stderr == '', f'a good trace gives no warning: {result.stderr.strip()}')
    with open(layout_path, encoding='utf-8') as f:
        layout = json.load(f)
    image = matplotlib.image.imread(out)
    height, width = image.shape[:2]
    check(width == 800, f'--width 10 --dpi 80 gives 800 px, not {width}')
    check((width, height) == (layout['image']['width'], layout['image']['height']),
          'the layout reports the image size')
    labels = [(lane['pid'], lane['tid'], lane['label'], lane['process']) for lane in layout['lanes']]
    check(labels == [(1, 10, "stream 1 'decode'", 'opencl:0 (pthread-test)'),
                     (1, 11, "stream 2 'compute'", 'opencl:0 (pthread-test)'),
                     (2, 20, 'pid 2 tid 20', 'host:0')], f'lanes in order, named: {labels}')
    check(layout['unit'] == 'ms', f"a 2.3 ms trace is shown in ms, not {layout['unit']}")
    colors = layout['colors']
    check(set(colors) == set(KINDS), f'a color for every kind, the unknown one too: {sorted(colors)}')
    check(colors['mystery_kind'] not in {colors[k] for k in KINDS if k != 'mystery_kind'},
          'the unknown kind has its own (neutral) color')
    lane_of = {(lane['pid'], lane['tid']): lane for lane in layout['lanes']}
    for kind, pid, tid, ts in bars:
        lane = lane_of[(pid, tid)]
        row, col = pixel(image, layout, ts + 50.0, (lane['bar_top'] + lane['bar_bottom']) / 2)
        check(distance(image[row, col], rgb(colors[kind])) < 0.02,
              f'{kind} bar at ({row}, {col}) has its color {colors[kind]}, not {image[row, col][:3]}')
    lane = lane_of[(instant['pid'], instant['tid'])]
    row, col = pixel(image, layout, instant['ts'], (lane['bar_top'] + lane['bar_bottom']) / 2)
    near = [distance(image[row, c], rgb(colors['launch'])) for c in range(col - 2, col + 3)]
    check(min(near) < 0.25, f'the instant is a tick in its kind color near ({row}, {col})')

    # The arrow: the same picture without flows differs along the arrow's path.
    plain, _, _, _ = synthetic(with_flows=False)
    result, out_plain = run(workdir, plain, '--width', '10', '--dpi', '80', '--no-labels', name='plain.json')
    check(result.returncode == 0, 'the trace without flows renders')
    if result.returncode != 0:
        return
    image_plain = matplotlib.image.imread(out_plain)
    check(image_plain.shape == image.shape, 'the same size without flows')
    if image_plain.shape != image.shape:
        return
    start, end = lane_of[(1, 10)], lane_of[(2, 20)]
    y0, y1 = (start['y_top'] + start['y_bottom']) / 2, (end['y_top'] + end['y_bottom']) / 2
    x0, x1 = flow[0]['ts'], flow[1]['ts']
    differing = dark = 0
    samples = [0.3 + 0.05 * i for i in range(9)]
    for t in samples:
        row, col = pixel(image, layout, x0 + t * (x1 - x0), y0 + t * (y1 - y0))
        window = [(r, c) for r in range(row - 1, row + 2) for c in range(col - 1, col + 2)]
        if any(distance(image[r, c], image_plain[r, c]) > 0.1 for r, c in window):
            differing += 1
        if any(distance(image[r, c], rgb(layout['flow_color'])) < 0.5 for r, c in window):
            dark += 1
    check(differing == len(samples), f'the arrow is drawn along its path ({differing}/{len(samples)} points)')
    check(dark == len(samples), f'the arrow has the flow color ({dark}/{len(samples)} points)')
    check(layout['flows'] == 1, 'one flow drawn')


def test_variants(workdir):
    trace, _, _, _ = synthetic()
    result, _ = run(workdir, trace['traceEvents'], '--no-labels', name='array.json')
    check(result.returncode == 0, f'a top-level array is accepted: {result.stderr.strip()}')

    layout_path = os.path.join(workdir, 'window.layout.json')
    result, out = run(workdir, trace, '--start', '400', '--end', '900', '--title', 'window', '--layout-json',
                      layout_path, name='window.json')
    check(result.returncode == 0 and os.path.exists(out), f'a window renders: {result.stderr.strip()}')
    if result.returncode == 0:
        with open(layout_path, encoding='utf-8') as f:
            layout = json.load(f)
        check(layout['unit'] == 'µs' and layout['xlim_us'] == [400, 900],
              f"a 500 us window in us, from 400 to 900: {layout['unit']}, {layout['xlim_us']}")

    # Lacking fields and an unmatched flow: drawn, with warnings.
    trace['traceEvents'] += [{'ph': 'X', 'name': 'no dur', 'cat': 'launch', 'pid': 1, 'tid': 10, 'ts': T0},
                             {'ph': 'X', 'cat': 'launch', 'pid': 1, 'ts': T0, 'dur': 'long'}, 17,
                             {'ph': 's', 'id': 99, 'cat': 'event', 'pid': 1, 'tid': 10, 'ts': T0}]
    result, out = run(workdir, trace, name='partial.json')
    check(result.returncode == 0 and os.path.exists(out), f'a partly bad trace still renders: {result.stderr}')
    check('skipped 3 of' in result.stderr and "no 'dur'" in result.stderr and 'no end' in result.stderr,
          f'and says what it skipped: {result.stderr.strip()}')

    # Thousands of events over 20 lanes, in ms.
    events = [meta('thread_name', p, t, f'stream {t}') for p in (1, 2) for t in range(10)]
    events += [{'ph': 'X', 'name': 'launch k', 'cat': KINDS[i % len(KINDS)], 'pid': 1 + i % 2,
                'tid': i % 10, 'ts': T0 + 3.0 * i, 'dur': 2.5} for i in range(6000)]
    events += [{'ph': 's', 'id': i, 'cat': 'event', 'pid': 1, 'tid': i % 10, 'ts': T0 + 30.0 * i}
               for i in range(200)]
    events += [{'ph': 'f', 'bp': 'e', 'id': i, 'cat': 'event', 'pid': 2, 'tid': (i + 3) % 10,
                'ts': T0 + 30.0 * i + 40} for i in range(200)]
    layout_path = os.path.join(workdir, 'big.layout.json')
    result, out = run(workdir, {'traceEvents': events}, '--layout-json', layout_path, name='big.json')
    check(result.returncode == 0, f'6000 events on 20 lanes render: {result.stderr.strip()}')
    if result.returncode == 0:
        with open(layout_path, encoding='utf-8') as f:
            layout = json.load(f)
        check(len(layout['lanes']) == 20 and layout['unit'] == 'ms' and layout['flows'] == 200,
              f"20 lanes, in ms, 200 flows: {len(layout['lanes'])}, {layout['unit']}, {layout['flows']}")


def test_bad_inputs(workdir):
    ops = synthetic()[0]
    only_meta = {'traceEvents': [meta('process_name', 1, None, 'x'),
                                 {'ph': 'C', 'name': 'c', 'pid': 1, 'ts': 1.0, 'args': {'v': 1}}]}
    cases = {
        'invalid JSON': ('{"traceEvents": [', [], 'not valid JSON'),
        'empty file': ('', [], 'empty'),
        'no traceEvents': ({'events': []}, [], 'traceEvents'),
        'traceEvents not an array': ({'traceEvents': {}}, [], 'not an array'),
        'a number at top level': ('42', [], 'top level'),
        'no operations': (only_meta, [], 'nothing to draw'),
        'empty traceEvents': ({'traceEvents': []}, [], 'nothing to draw'),
        'operations lacking fields': ({'traceEvents': [{'ph': 'X', 'name': 'a'}, {'ph': 'i', 'ts': 'x'}]}, [],
                                      'nothing to draw'),
        'only a flow with no end': ({'traceEvents': [{'ph': 's', 'id': 1, 'cat': 'event', 'pid': 1, 'tid': 1,
                                                      'ts': 1.0}]}, [], 'no end'),
        'an empty window': (ops, ['--start', '100000', '--end', '200000'], 'no operations between'),
        'start after end': (ops, ['--start', '50', '--end', '10'], 'empty'),
        'unwritable output': (ops, ['-o', '/nonexistent-dir/x.png'], 'cannot write'),
        'bad width': (ops, ['--width', '-3'], '--width'),
    }
    for name, (trace, extra, expected) in cases.items():
        result, out = run(workdir, trace, *extra, name='bad.json')
        check(result.returncode != 0, f'{name}: non-zero exit (got {result.returncode})')
        check('Traceback' not in result.stderr, f'{name}: no traceback:\n{result.stderr}')
        check(expected in result.stderr, f'{name}: the message says "{expected}": {result.stderr.strip()}')
    result = subprocess.run([sys.executable, TOOL, os.path.join(workdir, 'missing.json'), '-o',
                             os.path.join(workdir, 'm.png')], capture_output=True, text=True, timeout=60)
    check(result.returncode != 0 and 'cannot read' in result.stderr and 'Traceback' not in result.stderr,
          f'a missing file: a clear message: {result.stderr.strip()}')


def main():
    with tempfile.TemporaryDirectory(prefix='trace_plot_test.') as workdir:
        test_render(workdir)
        test_variants(workdir)
        test_bad_inputs(workdir)
    if failures:
        print(f'{len(failures)} check(s) failed')
        return 1
    print('all trace_plot checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
