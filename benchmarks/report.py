#!/usr/bin/env python3
"""Pairs the benchmark results, prints the table of ratios against the goals
of issue 5, and draws the plot for docs/performance.md.

  report.py RESULTS_DIR [--png docs/performance.png] [--markdown RESULTS_DIR/summary.md]

RESULTS_DIR holds what run.sh writes: Google Benchmark JSON files (*_bench.json),
callgrind.json (OpenCL), callgrind_cuda.json and compile_time.json. Benchmarks are named PAIR/CASE/SIDE
(bench_common.hpp); with repetitions the median is used.
"""
import argparse
import glob
import json
import os
import re
import sys

UNIT_NS = {'ns': 1.0, 'us': 1e3, 'ms': 1e6, 's': 1e9}


def load_benchmarks(results):
    """{(pair, case): {side: nanoseconds per operation}}"""
    table = {}
    for path in sorted(glob.glob(os.path.join(results, '*_bench.json'))):
        with open(path) as f:
            data = json.load(f)
        entries = data.get('benchmarks', [])
        medians = [e for e in entries if e.get('run_type') == 'aggregate' and e.get('aggregate_name') == 'median']
        for e in medians or [e for e in entries if e.get('run_type') == 'iteration']:
            name = re.sub(r'/(real_time|manual_time)$', '', e['run_name'])
            pair, case, side = name.rsplit('/', 2)
            ns = e['real_time'] * UNIT_NS[e.get('time_unit', 'ns')] / e.get('batch', 1)
            table.setdefault((pair, case), {})[side] = ns
    return table


def fmt_ns(ns):
    if ns >= 1e6:
        return '%.2f ms' % (ns / 1e6)
    if ns >= 1e3:
        return '%.2f us' % (ns / 1e3)
    return '%.0f ns' % ns


class Report:
    def __init__(self):
        self.rows = []  # (pair, case, measured, ratio text, value, goal text, met)

    def add(self, pair, case, measured, ratio_name, value, goal_text, met):
        self.rows.append((pair, case, measured, ratio_name, value, goal_text, met))

    def markdown(self):
        out = ['| pair | case | measured | ratio | value | goal | met |', '|---|---|---|---|---|---|---|']
        for pair, case, measured, ratio_name, value, goal, met in self.rows:
            mark = '' if met is None else ('yes' if met else '**no**')
            out.append('| %s | %s | %s | %s | %.3f | %s | %s |' % (pair, case, measured, ratio_name, value, goal, mark))
        return '\n'.join(out)


def size_key(case):
    m = re.match(r'(\d+)(KiB|MiB)', case)
    return int(m.group(1)) * (1024 if m.group(2) == 'MiB' else 1) if m else 0


def build(results):
    bench = load_benchmarks(results)
    rep = Report()
    plot = {'launch': [], 'host': {}, 'copies': {}, 'compile': {}, 'cuda_instr': [], 'cuda_time': []}

    # 1. OpenCL launch path: time and instructions, ours / raw.
    for pair in ('launch_enqueue', 'launch_finish'):
        for (p, case), sides in sorted(bench.items()):
            if p != pair or 'ours' not in sides or 'raw' not in sides:
                continue
            r = sides['ours'] / sides['raw']
            extra = ''
            if 'raw_profiling' in sides:
                extra = ', raw+profiling %s' % fmt_ns(sides['raw_profiling'])
            rep.add('1 OpenCL ' + pair.split('_')[1], case,
                    'ours %s, raw %s%s' % (fmt_ns(sides['ours']), fmt_ns(sides['raw']), extra),
                    'time ours/raw', r, '<= 1.02', r <= 1.02)
            plot['launch'].append((pair.split('_')[1] + ' ' + case, r))
    cg_path = os.path.join(results, 'callgrind.json')
    if os.path.isfile(cg_path):
        with open(cg_path) as f:
            cg = json.load(f)
        for case, row in cg['instructions_per_launch'].items():
            r = row['ours'] / row['raw']
            rep.add('1 OpenCL instructions', case,
                    'ours %.0f, raw %.0f instr/launch' % (row['ours'], row['raw']),
                    'instr ours/raw', r, '<= 1.02', r <= 1.02)
            plot['launch'].append(('instr ' + case, r))

    # 2. Host backend against oneTBB, OpenMP and a spinning fork-join.
    fj = bench.get(('fork_join', 'empty'), {})
    if 'ours' in fj:
        measured = ', '.join('%s %s' % (s, fmt_ns(v)) for s, v in fj.items())
        if 'tbb_handoff' in fj:  # issue 12: against a TBB launch whose work really leaves the caller
            r = fj['ours'] / fj['tbb_handoff']
            rep.add('2 host launch+sync', 'empty kernel', measured, 'time ours/tbb_handoff', r, '<= 1.5', r <= 1.5)
            measured = ''
        if 'tbb' in fj:
            r = fj['ours'] / fj['tbb']
            rep.add('2 host launch+sync', 'empty kernel', measured, 'time ours/tbb (stays on caller)', r, '(context)',
                    None)
        if 'openmp' in fj:
            r = fj['ours'] / fj['openmp']
            rep.add('2 host launch+sync', 'empty kernel', '', 'time ours/openmp', r, '< 1', r < 1)
        if 'spin' in fj:
            rep.add('2 host launch+sync', 'empty kernel', '', 'time ours/spin', fj['ours'] / fj['spin'], '(floor)', None)
        plot['host']['launch+sync'] = fj
    enq = bench.get(('enqueue', 'empty'), {})
    if 'ours' in enq:
        measured = ', '.join('%s %s' % (s, fmt_ns(v)) for s, v in enq.items())
        rep.add('2 host enqueue', 'empty kernel', measured, 'ns per ThenLaunch', enq['ours'], '<= 50 ns',
                enq['ours'] <= 50)
        if 'tbb' in enq:
            rep.add('2 host enqueue', 'empty kernel', '', 'time ours/tbb task_group::run', enq['ours'] / enq['tbb'],
                    '(context)', None)
        plot['host']['enqueue'] = enq
    sx = bench.get(('saxpy', '2^24'), {})
    peers = {s: v for s, v in sx.items() if s in ('tbb', 'openmp')}
    if 'ours' in sx and peers:
        best = min(peers, key=peers.get)
        r = peers[best] / sx['ours']
        measured = ', '.join('%s %s' % (s, fmt_ns(v)) for s, v in sx.items())
        rep.add('2 host saxpy', '2^24 floats', measured, 'speed ours/' + best, r, '>= 0.95', r >= 0.95)
        plot['host']['saxpy'] = sx

    # 3. Copies: throughput relative to the raw call (or memcpy on host).
    for (p, case), sides in sorted(bench.items(), key=lambda kv: (kv[0][0], size_key(kv[0][1]))):
        if not p.startswith('copy_') or 'ours' not in sides:
            continue
        base = 'raw' if 'raw' in sides else 'memcpy'
        if base not in sides:
            continue
        r = sides[base] / sides['ours']
        label = p[len('copy_'):].replace('_', ' ')
        rep.add('3 copy ' + label, case, 'ours %s, %s %s' % (fmt_ns(sides['ours']), base, fmt_ns(sides[base])),
                'speed ours/' + base, r, '>= 0.97', r >= 0.97)
        plot['copies'].setdefault(label, []).append((size_key(case), r))

    # 4. CUDA launch path against the counting driver double (no GPU here).
    cg_path = os.path.join(results, 'callgrind_cuda.json')
    if os.path.isfile(cg_path):
        with open(cg_path) as f:
            cg = json.load(f)
        for case, row in cg['instructions_per_launch'].items():
            above = row['ours'] - row['driver_only']
            rep.add('4 CUDA instructions', case,
                    'ours %.0f, raw %.0f, driver call alone %.0f instr/launch'
                    % (row['ours'], row['raw'], row['driver_only']),
                    'instr ours - driver call', above, '<= 150', above <= 150)
            rep.add('4 CUDA instructions', case, '', 'instr ours/raw', row['ours'] / row['raw'], '(context)', None)
            if 'consumer' in row:  # the same launch from a -O2 unit of its own (cuda_launch_consumer.cpp)
                consumer_above = row['consumer'] - row['driver_only']
                rep.add('4 CUDA instructions', case, 'consumer unit %.0f instr/launch' % row['consumer'],
                        'instr consumer - driver call', consumer_above, '<= 150', consumer_above <= 150)
            plot['cuda_instr'].append((case, above, row['raw'] - row['driver_only']))
        for case, row in cg.get('allocations_per_launch', {}).items():
            if 'ours' in row:
                rep.add('4 CUDA allocations', case, 'operator new calls per launch', 'allocations per launch',
                        row['ours'], '= 0', row['ours'] == 0)
    for (p, case), sides in sorted(bench.items()):
        if p != 'cuda_launch' or 'ours' not in sides or 'raw' not in sides:
            continue
        measured = ', '.join('%s %s' % (s, fmt_ns(v)) for s, v in sorted(sides.items()))
        rep.add('4 CUDA time', case, measured, 'time ours/raw', sides['ours'] / sides['raw'], '(context)', None)
        plot['cuda_time'].append((case, sides))

    # 5. Compile time of one typed launch per backend header.
    ct_path = os.path.join(results, 'compile_time.json')
    if os.path.isfile(ct_path):
        with open(ct_path) as f:
            ct = json.load(f)
        m = ct['median_seconds']
        for b in ('host', 'opencl', 'cuda'):
            if 'se_' + b not in m:
                continue
            measured = ('se %.2f s (front end %.2f s), std-only %.2f s, std+third-party %.2f s, our header alone %.2f s'
                        % (m['se_' + b], m.get('fe_' + b, float('nan')), m['std_' + b], m['deps_' + b],
                           m.get('inc_' + b, float('nan'))))
            if 'raw_' + b in m:
                measured += ', raw %.2f s' % m['raw_' + b]
            r = m['se_' + b] / m['std_' + b]
            rep.add('5 compile time', b, measured, 'se/std-only', r, '<= 1.2', r <= 1.2)
            if 'raw_' + b in m:
                rep.add('5 compile time', b, '', 'se/raw', m['se_' + b] / m['raw_' + b], '(context)', None)
            rep.add('5 compile time', b, '', 'se/std+third-party', m['se_' + b] / m['deps_' + b], '(context)', None)
            if 'sep_' + b in m:
                # The same unit under STREAMEXECUTOR_SEPARATE_COMPILATION (docs/separate_compilation.md);
                # the compiled part itself is paid once per project.
                sep_measured = 'separately compiled %.2f s, its compiled part %.2f s once' % (
                    m['sep_' + b], m.get('part_' + b, float('nan')))
                r = m['sep_' + b] / m['std_' + b]
                rep.add('5 compile time', b + ' (separate)', sep_measured, 'sep/std-only', r, '<= 1.2', r <= 1.2)
                if 'raw_' + b in m:
                    rep.add('5 compile time', b + ' (separate)', '', 'sep/raw', m['sep_' + b] / m['raw_' + b],
                            '(context)', None)
            plot['compile'][b] = {k.split('_')[0]: v for k, v in m.items() if k.endswith('_' + b)}

    # 6. Canned RNG: throughput through the plugin against Random123 called directly (rng_bench.cpp).
    count_key = lambda kv: (kv[0][0], int(kv[0][1]) if kv[0][1].isdigit() else 0)
    for (p, case), sides in sorted(bench.items(), key=count_key):
        if not p.startswith('rng_') or 'ours' not in sides:
            continue
        base = 'random123' if 'random123' in sides else 'raw'
        if base not in sides:
            continue
        n = int(case) if case.isdigit() else 0
        rate = lambda ns: ('%.0f M/s' % (n / ns * 1e3)) if n else fmt_ns(ns)
        rep.add('6 ' + p[len('rng_'):].replace('_', ' '), case,
                'ours %s (%s), %s %s (%s)' % (fmt_ns(sides['ours']), rate(sides['ours']), base, fmt_ns(sides[base]),
                                               rate(sides[base])),
                'speed ours/' + base, sides[base] / sides['ours'], '(context)', None)

    # 7. Canned FFT: one transform through the plugin against the library called directly (fft_bench.cpp).
    pow_key = lambda kv: (kv[0][0], int(kv[0][1][2:]) if kv[0][1].startswith('2^') else 0)
    for (p, case), sides in sorted(bench.items(), key=pow_key):
        if not p.startswith('fft_') or 'ours' not in sides:
            continue
        base = next((b for b in ('fftw', 'clfft') if b in sides), None)
        if base is None:
            continue
        r = sides[base] / sides['ours']
        rep.add('7 ' + p[len('fft_'):].replace('_', ' '), case,
                'ours %s, %s %s' % (fmt_ns(sides['ours']), base, fmt_ns(sides[base])),
                'speed ours/' + base, r, '>= 0.98', r >= 0.98)
    return rep, plot


def draw(plot, png):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(13, 13))
    ax = axes[0][0]
    if plot['launch']:
        labels, values = zip(*plot['launch'])
        ax.barh(range(len(values)), values, color=['tab:green' if v <= 1.02 else 'tab:red' for v in values])
        ax.set_yticks(range(len(values)), labels, fontsize=8)
        ax.axvline(1.0, color='black', lw=0.8)
        ax.axvline(1.02, color='tab:red', ls='--', lw=1, label='goal 1.02')
        ax.set_xlim(min(0.8, min(values) - 0.05), max(1.2, max(values) + 0.05))
        ax.legend(fontsize=8)
    ax.set_title('1. OpenCL launch: ours / raw (time, instructions)')

    ax = axes[0][1]
    groups = [(k, v) for k, v in plot['host'].items()]
    sides = ['ours', 'tbb', 'openmp', 'spin']
    width = 0.2
    for i, side in enumerate(sides):
        xs = [g for g, (_, d) in enumerate(groups) if side in d]
        ys = [d[side] / 1e3 for _, d in groups if side in d]
        if xs:
            ax.bar([x + (i - 1.5) * width for x in xs], ys, width, label=side)
    ax.set_xticks(range(len(groups)), [g for g, _ in groups])
    ax.set_yscale('log')
    ax.set_ylabel('microseconds per operation (log)')
    ax.set_title('2. host backend against oneTBB, OpenMP, spin fork-join')
    ax.legend(fontsize=8)

    ax = axes[1][0]
    for label, points in sorted(plot['copies'].items()):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker='o', label=label)
    ax.axhline(0.97, color='tab:red', ls='--', lw=1, label='goal 0.97')
    ax.set_xscale('log', base=2)
    sizes = sorted({p[0] for points in plot['copies'].values() for p in points})
    ax.set_xticks(sizes, ['%d MiB' % (s // 1024) if s >= 1024 else '%d KiB' % s for s in sizes])
    ax.set_xlabel('bytes per copy')
    ax.set_ylabel('speed ours / raw (or memcpy)')
    ax.set_title('3. copies')
    ax.legend(fontsize=7, ncol=2)

    ax = axes[1][1]
    backends = list(plot['compile'])
    kinds = ['std', 'deps', 'raw', 'inc', 'se', 'sep']
    names = {'std': 'standard headers only', 'deps': 'std + fmt/driver headers', 'raw': 'raw driver API',
             'inc': 'our header, no launch', 'se': 'streamexecutor, one launch',
             'sep': 'the same, separately compiled'}
    width = 0.14
    for i, kind in enumerate(kinds):
        xs = [b for b, name in enumerate(backends) if kind in plot['compile'][name]]
        ys = [plot['compile'][name][kind] for name in backends if kind in plot['compile'][name]]
        if xs:
            ax.bar([x + (i - 2.5) * width for x in xs], ys, width, label=names[kind])
    ax.set_xticks(range(len(backends)), backends)
    ax.set_ylabel('seconds (median of c++ -c)')
    ax.set_title('5. compile time of one typed launch')
    ax.legend(fontsize=8)

    ax = axes[2][0]
    if plot['cuda_instr']:
        cases = [c for c, _, _ in plot['cuda_instr']]
        xs = range(len(cases))
        ax.bar([x - 0.2 for x in xs], [o for _, o, _ in plot['cuda_instr']], 0.4, label='ours')
        ax.bar([x + 0.2 for x in xs], [r for _, _, r in plot['cuda_instr']], 0.4, label='raw driver-API program')
        ax.axhline(150, color='tab:red', ls='--', lw=1, label='goal 150')
        ax.set_xticks(list(xs), cases)
        ax.set_ylabel('instructions per launch above cuLaunchKernel')
        ax.legend(fontsize=8)
    ax.set_title('4. CUDA launch (counting driver double): instructions')

    ax = axes[2][1]
    if plot['cuda_time']:
        sides = ['ours', 'raw', 'driver_only']
        for i, side in enumerate(sides):
            ys = [d.get(side, 0) for _, d in plot['cuda_time']]
            ax.bar([x + (i - 1) * 0.27 for x in range(len(ys))], ys, 0.27, label=side)
        ax.set_xticks(range(len(plot['cuda_time'])), [c for c, _ in plot['cuda_time']])
        ax.set_ylabel('ns per launch')
        ax.legend(fontsize=8)
    ax.set_title('4. CUDA launch (counting driver double): time')

    fig.tight_layout()
    fig.savefig(png, dpi=90)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('results')
    p.add_argument('--png', default='')
    p.add_argument('--markdown', default='')
    args = p.parse_args()
    rep, plot = build(args.results)
    table = rep.markdown()
    print(table)
    missed = [r for r in rep.rows if r[6] is False]
    print('\n%d goals checked, %d missed' % (sum(r[6] is not None for r in rep.rows), len(missed)))
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(table + '\n')
    if args.png:
        try:
            draw(plot, args.png)
            print('plot: ' + args.png)
        except ImportError as e:
            print('report: no plot (%s); install python3-matplotlib' % e, file=sys.stderr)


if __name__ == '__main__':
    main()
