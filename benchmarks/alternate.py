#!/usr/bin/env python3
"""Before/after comparisons of Google Benchmark binaries on a noisy machine.

Runs every binary once per round, in a new random order each round, with the
same filter, and prints each benchmark's median per round, one row per
binary. A slow moment of the machine then shows as a column where every
binary (and the peers in the same process, such as TBB) is slow, instead of
as a difference between binaries.

  alternate.py --rounds 5 --filter 'enqueue|fork_join' BEFORE AFTER [...]

Times are in ns; a benchmark that reports a `batch=N` counter is divided by N
(a per-launch figure for host_bench's enqueue batches).
"""
import argparse
import collections
import random
import re
import subprocess


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--rounds', type=int, default=5)
    p.add_argument('--filter', default='.')
    p.add_argument('--repetitions', type=int, default=3)
    p.add_argument('--min-time', default='0.1')
    p.add_argument('binaries', nargs='+')
    args = p.parse_args()
    scale = {'ns': 1.0, 'us': 1e3, 'ms': 1e6, 's': 1e9}
    medians = collections.defaultdict(lambda: collections.defaultdict(list))
    for _ in range(args.rounds):
        order = list(args.binaries)
        random.shuffle(order)
        for binary in order:
            out = subprocess.run([binary, f'--benchmark_repetitions={args.repetitions}',
                                  '--benchmark_report_aggregates_only=true',
                                  f'--benchmark_min_time={args.min_time}', f'--benchmark_filter={args.filter}'],
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                m = re.match(r'(\S+)_median\s+([\d.]+) (ns|us|ms|s)\b.*?(?:batch=(\d+))?\s*$', line)
                if not m:
                    continue
                name = re.sub(r'/(manual|real)_time$', '', m.group(1))
                value = float(m.group(2)) * scale[m.group(3)]
                if m.group(4):
                    value /= int(m.group(4))
                medians[name][binary].append(value)
    for name in sorted(medians):
        print(name)
        for binary in args.binaries:
            print(f'   {binary:30s}' + ''.join(f'{v:10.0f}' for v in medians[name][binary]))


if __name__ == '__main__':
    main()
