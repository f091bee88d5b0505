#!/usr/bin/env python3
"""Pair 5: compile time of a consumer translation unit with one typed launch.

For each backend header it times `c++ -c` of
  se_BACKEND    compile_time/se_BACKEND.cpp: one typed launch through the library
  raw_BACKEND   compile_time/raw_BACKEND.cpp: the same program on raw CLHPP / cuda.h
  std_BACKEND   only the standard headers the library's headers reachable from
                <streamexecutor/BACKEND.hpp> include (generated: the walk below)
  deps_BACKEND  std_BACKEND plus the third-party headers they include
                (fmt, CL/opencl.hpp, cuda.h): what is left is our own code
  inc_BACKEND   <streamexecutor/BACKEND.hpp> and an empty main: our headers
                without the templates one launch instantiates
  fe_BACKEND    se_BACKEND with -fsyntax-only: the front end alone (parsing and
                template instantiation); se - fe is code generation
  sep_BACKEND   se_BACKEND under STREAMEXECUTOR_SEPARATE_COMPILATION: what the
                unit costs when the project compiles the library's part once
  part_BACKEND  that compiled part (<streamexecutor/src.hpp>), paid once per
                project, not per unit
  pch_BACKEND   se_BACKEND with a precompiled header of <streamexecutor/BACKEND.hpp>
                (g++'s .gch, as Meson's cpp_pch and CMake's target_precompile_headers
                make it); seppch_BACKEND the same separately compiled; rawpch_BACKEND
                raw_BACKEND with a precompiled header of the raw API's own header
  gch_BACKEND, sepgch_BACKEND, rawgch_BACKEND  building those headers, once per
                project (a unit is compiled with a header built in the same run)
Runs go round-robin, so drift on a busy machine hits every unit alike; the
median of the runs is reported, as wall seconds and as the compiler's CPU
seconds (user + system, from wait4), which a busy machine disturbs far less.

  compile_time.py --include include --out compile_time.json [--runs 3] [--cxx c++]
                  [--cuda-include /usr/local/cuda/include]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = ['-std=c++20', '-O2']
OPENCL_DEFINES = ['-DCL_HPP_TARGET_OPENCL_VERSION=300', '-DCL_HPP_MINIMUM_OPENCL_VERSION=200',
                  '-DCL_TARGET_OPENCL_VERSION=300']
THIRD_PARTY = re.compile(r'^(fmt/|CL/|cuda)')


def reachable_headers(include_dir, top):
    """Angle-bracket includes of every one of our headers reachable from top,
    split into standard/system headers and third-party ones."""
    seen, system, third = set(), [], []
    stack = [top]
    while stack:
        rel = stack.pop()
        if rel in seen:
            continue
        seen.add(rel)
        if not os.path.isfile(os.path.join(include_dir, rel)):
            continue  # generated in the build tree (cuda/conditional_setter.inc), behind __has_include
        with open(os.path.join(include_dir, rel)) as f:
            for line in f:
                m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
                if not m:
                    continue
                name = m.group(2)
                if name.startswith('streamexecutor/'):
                    stack.append(name)
                elif THIRD_PARTY.match(name):
                    if name not in third:
                        third.append(name)
                elif name not in system:
                    system.append(name)
    return sorted(system), third


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--include', required=True)
    p.add_argument('--out', required=True)
    p.add_argument('--runs', type=int, default=3)
    p.add_argument('--cxx', default=os.environ.get('CXX', 'c++'))
    p.add_argument('--cuda-include', default='')
    p.add_argument('--backends', default='host,opencl,cuda')
    args = p.parse_args()
    include = os.path.abspath(args.include)

    backends = args.backends.split(',')
    if 'cuda' in backends and not (args.cuda_include and os.path.isfile(os.path.join(args.cuda_include, 'cuda.h'))):
        print('compile_time: no cuda.h given (--cuda-include), skipping the CUDA units', file=sys.stderr)
        backends.remove('cuda')
    if 'opencl' in backends and not os.path.isfile('/usr/include/CL/opencl.hpp'):
        print('compile_time: no CL/opencl.hpp, skipping the OpenCL units', file=sys.stderr)
        backends.remove('opencl')

    tmp = tempfile.mkdtemp(prefix='se_compile_time_')
    units = {}  # name -> (source path, extra flags)
    headers = {}
    for b in backends:
        extra = ['-I' + include, '-DSTREAMEXECUTOR_WITH_%s=1' % b.upper()]
        if b == 'opencl':
            extra += OPENCL_DEFINES
        if b == 'cuda':
            extra += ['-isystem', args.cuda_include]
        system, third = reachable_headers(include, 'streamexecutor/%s.hpp' % b)
        headers[b] = {'standard': system, 'third_party': third}
        for kind, names in (('std', system), ('deps', system + third)):
            path = os.path.join(tmp, '%s_%s.cpp' % (kind, b))
            with open(path, 'w') as f:
                f.write(''.join('#include <%s>\n' % h for h in names) + 'int main() { return 0; }\n')
            units['%s_%s' % (kind, b)] = (path, extra)
        path = os.path.join(tmp, 'inc_%s.cpp' % b)
        with open(path, 'w') as f:
            f.write('#include <streamexecutor/%s.hpp>\nint main() { return 0; }\n' % b)
        units['inc_' + b] = (path, extra)
        units['se_' + b] = (os.path.join(HERE, 'compile_time', 'se_%s.cpp' % b), extra)
        units['fe_' + b] = (os.path.join(HERE, 'compile_time', 'se_%s.cpp' % b), extra + ['-fsyntax-only'])
        separate = extra + ['-DSTREAMEXECUTOR_SEPARATE_COMPILATION=1']
        units['sep_' + b] = (os.path.join(HERE, 'compile_time', 'se_%s.cpp' % b), separate)
        path = os.path.join(tmp, 'part_%s.cpp' % b)
        with open(path, 'w') as f:
            f.write('#include <streamexecutor/src.hpp>\n')
        units['part_' + b] = (path, separate)
        raw = os.path.join(HERE, 'compile_time', 'raw_%s.cpp' % b)
        if os.path.isfile(raw):
            units['raw_' + b] = (raw, extra)
        # Precompiled headers: the .gch sits beside the header that -include
        # names, built with the flags of the units that use it (g++ refuses,
        # and -Werror=invalid-pch fails the unit, where they differ).
        se_source = os.path.join(HERE, 'compile_time', 'se_%s.cpp' % b)
        pchs = [('', '#include <streamexecutor/%s.hpp>\n' % b, extra, se_source),
                ('sep', '#include <streamexecutor/%s.hpp>\n' % b, separate, se_source)]
        if os.path.isfile(raw):
            with open(raw) as f:
                raw_includes = ''.join(line for line in f if line.lstrip().startswith('#include'))
            pchs.append(('raw', raw_includes, extra, raw))
        for prefix, text, flags, source in pchs:
            header = os.path.join(tmp, '%spch_%s.hpp' % (prefix, b))
            with open(header, 'w') as f:
                f.write(text)
            units['%sgch_%s' % (prefix, b)] = (header, flags + ['-x', 'c++-header', '-o', header + '.gch'])
            units['%spch_%s' % (prefix, b)] = (source, flags + ['-include', header, '-Werror=invalid-pch'])

    times = {name: [] for name in units}
    cpu = {name: [] for name in units}
    obj = os.path.join(tmp, 'unit.o')
    for _ in range(args.runs):
        for name, (source, extra) in units.items():
            own_output = '-fsyntax-only' in extra or 'c++-header' in extra
            cmd = [args.cxx] + FLAGS + extra + [source] + ([] if own_output else ['-c', '-o', obj])
            start = time.perf_counter()
            with tempfile.TemporaryFile() as err:
                child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
                # CPU time of the compiler and its children (cc1plus, as): unlike
                # wall time it barely moves when other work shares the cores.
                _, status, usage = os.wait4(child.pid, 0)
                elapsed = time.perf_counter() - start
                if os.waitstatus_to_exitcode(status) != 0:
                    err.seek(0)
                    sys.exit('compile_time: %s failed:\n%s\n%s' % (name, ' '.join(cmd), err.read()[-3000:].decode()))
            times[name].append(elapsed)
            cpu[name].append(usage.ru_utime + usage.ru_stime)

    result = {'compiler': subprocess.run([args.cxx, '--version'], capture_output=True, text=True).stdout.splitlines()[0],
              'flags': FLAGS, 'runs': args.runs, 'headers': headers,
              'median_seconds': {n: statistics.median(t) for n, t in times.items()},
              'median_cpu_seconds': {n: statistics.median(t) for n, t in cpu.items()},
              'all_seconds': times, 'all_cpu_seconds': cpu}
    shutil.rmtree(tmp, ignore_errors=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=2)
    for b in backends:
        m = result['median_seconds']
        line = 'compile %s: se %.2fs, headers only %.2fs, std-only %.2fs, std+third-party %.2fs' % (
            b, m['se_' + b], m['inc_' + b], m['std_' + b], m['deps_' + b])
        if 'raw_' + b in m:
            line += ', raw %.2fs' % m['raw_' + b]
        c = result['median_cpu_seconds']
        line += '; se/std %.2f' % (m['se_' + b] / m['std_' + b])
        line += ' | cpu: se %.2fs, std-only %.2fs, se/std %.2f' % (c['se_' + b], c['std_' + b], c['se_' + b] / c['std_' + b])
        if 'raw_' + b in c:
            line += ', raw %.2fs, se/raw %.2f' % (c['raw_' + b], c['se_' + b] / c['raw_' + b])
        base = 'raw_' + b if 'raw_' + b in c else 'std_' + b
        line += ' | separately compiled (cpu): %.2fs, %s %.2f; its compiled part %.2fs once' % (
            c['sep_' + b], 'sep/raw' if base.startswith('raw') else 'sep/std', c['sep_' + b] / c[base],
            c['part_' + b])
        if 'pch_' + b in c:
            line += ' | with a precompiled header (cpu): se %.2fs, separately compiled %.2fs' % (
                c['pch_' + b], c['seppch_' + b])
            if 'rawpch_' + b in c:
                line += ', raw %.2fs; se/rawpch %.2f, sep/rawpch %.2f, sep/raw %.2f' % (
                    c['rawpch_' + b], c['pch_' + b] / c['rawpch_' + b], c['seppch_' + b] / c['rawpch_' + b],
                    c['seppch_' + b] / c['raw_' + b])
            line += '; building the header %.2fs (separately compiled %.2fs) once' % (c['gch_' + b], c['sepgch_' + b])
        print(line)


if __name__ == '__main__':
    main()
