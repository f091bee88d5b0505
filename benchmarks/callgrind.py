#!/usr/bin/env python3
"""Pair 1, instructions: runs opencl_launch_count under callgrind and writes
the calling thread's instructions per launch, ours and raw, to a JSON file.

  callgrind.py BUILD_DIR/benchmarks/opencl_launch_count OUT.json [launches [KEEP_DIR]]

KEEP_DIR keeps callgrind's files, for callgrind_annotate --inclusive=yes FILE.

Callgrind counts instructions (Ir) without hardware counters. Only the
launching thread's file (callgrind.out.PID.N-01) is read, and the cost of the
empty loop is subtracted from both sides.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    driver, out_path = sys.argv[1], sys.argv[2]
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    keep = sys.argv[4] if len(sys.argv) > 4 else None
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or scratch
        os.makedirs(tmp, exist_ok=True)
        cmd = ['valgrind', '--tool=callgrind', '--collect-atstart=no', '--separate-threads=yes',
               '--callgrind-out-file=' + os.path.join(tmp, 'cg.out'), driver, str(launches)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit('callgrind run failed (%d):\n%s' % (run.returncode, run.stderr[-4000:]))
        counts = {}
        # One file per dump and thread; thread 1 is the launching thread.
        for path in glob.glob(os.path.join(tmp, 'cg.out*-01')):
            with open(path) as f:
                text = f.read()
            desc = re.search(r'^desc: Trigger: Client Request: (\S+)', text, re.M)
            total = re.search(r'^(?:summary|totals): (\d+)', text, re.M)
            if desc and total:
                counts[desc.group(1)] = int(total.group(1))
    results = {'launches': launches, 'instructions_per_launch': {}, 'raw_counts': counts}
    for n in (1, 3, 8):
        empty = counts.get('empty-%d' % n, 0)
        row = {}
        for side in ('ours', 'raw', 'raw_profiling'):
            key = '%s-%d' % (side, n)
            if key not in counts:
                sys.exit('callgrind: no dump named %s (found %s)' % (key, sorted(counts)))
            row[side] = (counts[key] - empty) / launches
        results['instructions_per_launch']['args:%d' % n] = row
    with open(out_path, 'w') as f:
        json.dump(results, f, indent=2)
    for what, row in results['instructions_per_launch'].items():
        print('callgrind %s: ours %.1f, raw %.1f, raw_profiling %.1f instructions per launch; ours/raw %.3f'
              % (what, row['ours'], row['raw'], row['raw_profiling'], row['ours'] / row['raw']))


if __name__ == '__main__':
    main()
