#!/usr/bin/env python3
"""Instructions per launch: runs a launch-count program (launch_count.hpp)
under callgrind and writes the calling thread's instructions per launch, for
every side it counted, to a JSON file.

  callgrind.py PROGRAM OUT.json [launches [KEEP_DIR]]

PROGRAM is opencl_launch_count (pair 1) or cuda_launch_count (pair 4; the
caller puts the counting driver double on LD_LIBRARY_PATH). KEEP_DIR keeps
callgrind's files, for callgrind_annotate --inclusive=yes FILE.

Callgrind counts instructions (Ir) without hardware counters. Only the
launching thread's files (callgrind.out.PID.N-01) are read; each dump is named
SIDE-ARGS, and the cost of the empty loop ("empty-ARGS") is subtracted from
every side. Lines "allocations SIDE-ARGS: K in L launches" that the program
prints are kept as operator new calls per launch.

Each side's count is also split by where the instructions ran: in PROGRAM
itself (the library's inlined launch path, or the raw side's own code) and in
the shared libraries (driver, libc). The library part moves by tens of
instructions from run to run with the driver's heap state (malloc's free
lists), the program's part does not: "own_instructions_per_launch" is the
figure to compare two builds with.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    program, out_path = sys.argv[1], sys.argv[2]
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    keep = sys.argv[4] if len(sys.argv) > 4 else None
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or scratch
        os.makedirs(tmp, exist_ok=True)
        cmd = ['valgrind', '--tool=callgrind', '--collect-atstart=no', '--separate-threads=yes',
               '--callgrind-out-file=' + os.path.join(tmp, 'cg.out'), program, str(launches)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit('callgrind run failed (%d):\n%s' % (run.returncode, run.stderr[-4000:]))
        counts = {}
        own_counts = {}
        objects = ObjectNames(glob.glob(os.path.join(tmp, 'cg.out*')))
        # One file per dump and thread; thread 1 is the launching thread.
        for path in glob.glob(os.path.join(tmp, 'cg.out*-01')):
            with open(path) as f:
                text = f.read()
            desc = re.search(r'^desc: Trigger: Client Request: (\S+)', text, re.M)
            total = re.search(r'^(?:summary|totals): (\d+)', text, re.M)
            if desc and total:
                counts[desc.group(1)] = int(total.group(1))
                own_counts[desc.group(1)] = SelfCostIn(text, objects, os.path.realpath(program))
    per_launch = {}
    own_per_launch = {}
    for dump, total in counts.items():
        side, args = dump.rsplit('-', 1)
        if side == 'empty':
            continue
        empty = counts.get('empty-' + args)
        if empty is None:
            sys.exit('callgrind: no empty-%s dump to subtract (found %s)' % (args, sorted(counts)))
        per_launch.setdefault('args:' + args, {})[side] = (total - empty) / launches
        own_per_launch.setdefault('args:' + args, {})[side] = (own_counts[dump] - own_counts['empty-' + args]) / launches
    if not per_launch:
        sys.exit('callgrind: no dumps found (found %s)' % sorted(counts))
    allocations = {}
    for m in re.finditer(r'^allocations (\S+)-(\d+): (\d+) in (\d+) launches$', run.stdout, re.M):
        allocations.setdefault('args:' + m.group(2), {})[m.group(1)] = int(m.group(3)) / int(m.group(4))
    results = {'program': os.path.basename(program), 'launches': launches,
               'instructions_per_launch': dict(sorted(per_launch.items(), key=lambda kv: int(kv[0][5:]))),
               'own_instructions_per_launch': dict(sorted(own_per_launch.items(), key=lambda kv: int(kv[0][5:]))),
               'allocations_per_launch': allocations, 'raw_counts': counts}
    with open(out_path, 'w') as f:
        json.dump(results, f, indent=2)
    for what, row in results['instructions_per_launch'].items():
        print('callgrind %s %s: %s instructions per launch' % (
            results['program'], what, ', '.join('%s %.1f' % kv for kv in sorted(row.items()))))
        own = results['own_instructions_per_launch'][what]
        print('callgrind %s %s: %s in the program itself' % (
            results['program'], what, ', '.join('%s %.1f' % kv for kv in sorted(own.items()))))


def ObjectNames(paths):
    """Callgrind names each object once, as "ob=(N) path", and then by (N)
    alone, possibly in another dump of the same run."""
    names = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                m = re.match(r'c?ob=\((\d+)\) (.+)', line.rstrip('\n'))
                if m:
                    names[m.group(1)] = m.group(2)
    return names


def SelfCostIn(text, objects, program):
    """Instructions that ran in `program`'s own code (its functions and what
    is inlined into them): the cost lines under an "ob=" naming it, leaving
    out the inclusive cost line that follows every "calls=" line."""
    in_program = False
    after_call = False
    total = 0
    for line in text.splitlines():
        if line.startswith('ob='):
            m = re.match(r'ob=\((\d+)\)(?: (.+))?', line)
            name = (m.group(2) or objects.get(m.group(1), '')) if m else line[3:]
            in_program = os.path.realpath(name) == program if name else False
        elif line.startswith('calls='):
            after_call = True
        elif line[:1].isdigit() or line[:1] in '+-*':
            if after_call:
                after_call = False
            elif in_program and len(line.split()) > 1:  # a position alone carries no cost
                total += int(line.split()[-1])
    return total


if __name__ == '__main__':
    main()
