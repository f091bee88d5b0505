#!/usr/bin/env python3
"""Separate compilation really moves code out of the consumer's unit.

Compiles a one-launch program for one backend (the compile-time benchmark's
benchmarks/compile_time/se_BACKEND.cpp) twice, header-only and with
STREAMEXECUTOR_SEPARATE_COMPILATION, and reads each object's symbols (nm):
the header-only object must define the backend's Stream, StreamExecutor and
Platform members and the set-up functions (program building, signature
checks), and the separate object must only refer to them (they come from the
compiled part). A macro that silently did nothing would fail here.

  check.py SOURCE BACKEND OUTDIR COMPILER [ARGS...]
"""
import os
import re
import subprocess
import sys

# Functions that are not templates on the launch's argument types: compiled
# once under separate compilation. Demangled-name prefixes, per backend.
MOVED = {
    'host': [
        'streamexecutor::Stream<streamexecutor::host>::BlockHostUntilDone()',
        # Not Init(): g++ 12 -O2 inlines the host Stream's Init into main in the header-only unit
        # (seen 2026-11-26), which then defines it nowhere and the check would prove nothing.
        'streamexecutor::Stream<streamexecutor::host>::~Stream()',
        'streamexecutor::Platform<streamexecutor::host>::ExecutorForDevice(int)',
    ],
    'opencl': [
        'streamexecutor::Stream<streamexecutor::opencl>::BlockHostUntilDone()',
        # Not Init() either: it forwards to Init(StreamPriority), which g++ -O2 inlines into main
        # in the header-only unit (its only caller there; seen 2026-11-28).
        'streamexecutor::Stream<streamexecutor::opencl>::~Stream()',
        'streamexecutor::Platform<streamexecutor::opencl>::ExecutorForDevice(int)',
        'streamexecutor::opencl_detail::GetProgram(',
        'streamexecutor::opencl_detail::CheckSignature(',
        'streamexecutor::opencl_detail::LaunchFaultStatus(',
    ],
}
# Built in the consumer's unit in both modes: what depends on the kernel's
# parameter types (here the refusal path of its launch).
STAYS = '::RefuseLaunch<'


def symbols(obj):
    out = subprocess.run(['nm', '-C', obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = [], []
    for line in out.splitlines():
        m = re.match(r'^\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(.*)$', line)
        if not m:
            continue
        (undefined if m.group(1) == 'U' else defined).append(m.group(2))
    return defined, undefined


def main():
    source, backend, outdir, compiler = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(outdir, exist_ok=True)
    failures = []
    objects = {}
    for mode, extra in (('header-only', []), ('separate', ['-DSTREAMEXECUTOR_SEPARATE_COMPILATION=1'])):
        obj = os.path.join(outdir, 'consumer_%s_%s.o' % (backend, mode))
        cmd = compiler + ['-std=c++20', '-O2'] + extra + ['-c', source, '-o', obj]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            print('%s compile failed:\n%s\n%s' % (mode, ' '.join(cmd), result.stderr[-4000:]))
            return 1
        objects[mode] = symbols(obj)
    whole_defined, _ = objects['header-only']
    sep_defined, sep_undefined = objects['separate']
    for name in MOVED[backend]:
        if not any(s.startswith(name) for s in whole_defined):
            failures.append('header-only object does not define %s (the check would prove nothing)' % name)
        if any(s.startswith(name) for s in sep_defined):
            failures.append('separately compiled object still defines %s' % name)
        # Class members are called from main; the set-up functions from
        # other out-of-line functions, so only the former show as references.
        if '<' in name and not any(s.startswith(name) for s in sep_undefined):
            failures.append('separately compiled object does not refer to %s' % name)
    for mode, (defined, _) in objects.items():
        if not any(STAYS in s for s in defined):
            failures.append('%s object has no RefuseLaunch<...> of its own' % mode)
    sizes = {mode: os.path.getsize(os.path.join(outdir, 'consumer_%s_%s.o' % (backend, mode))) for mode in objects}
    for f in failures:
        print(f)
    print('%s: %d moved functions checked; object %d bytes header-only, %d bytes separate; %d failures' % (
        backend, len(MOVED[backend]), sizes['header-only'], sizes['separate'], len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
