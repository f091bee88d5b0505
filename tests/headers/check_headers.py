#!/usr/bin/env python3
"""Every public header compiles on its own: for each header found under
INCLUDE/streamexecutor/ when the test runs (a glob, not a list, so that a new
backend or folder is covered the day it lands), a unit that includes only that
header is compiled with the strict flags of tests/strict_warnings/check.py.
A header that leans on another one to have been included first fails here.

Usage: check_headers.py INCLUDE [--jobs N] [--only PREFIX]... [--nvcc]
                        [--missing HEADER=WHAT]... -- COMPILER [ARGS...]

--missing  an optional library's header that this build did not find (WHAT
           names the library). A public header that fails only because it
           needs that one is reported as skipped, by name; every other failure
           fails the test, a missing header the build did find included.
--only     check only the headers whose path under streamexecutor/ starts
           with PREFIX (e.g. cuda/ or cuda.hpp).
--nvcc     COMPILER is nvcc: the unit is CUDA (.cu), and the strict flags go
           to the host compiler, less -Wpedantic (nvcc's own line directives
           in the code it hands the host compiler are a GCC extension).
"""
import argparse
import concurrent.futures
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
# The strict flags are tests/strict_warnings/check.py's, so that the two tests
# cannot drift apart.
_spec = importlib.util.spec_from_file_location("strict_check", HERE.parent / "strict_warnings" / "check.py")
_strict = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_strict)
FLAGS = _strict.FLAGS
NVCC_FLAGS = ["-std=c++20", "-Werror", "all-warnings", "-Xcompiler",
              ",".join(f for f in FLAGS if f.startswith("-W") and f != "-Wpedantic") + ",-fsyntax-only"]

# Files under include/ that are not headers a consumer includes: CUDA kernel
# sources compiled to PTX, and the generated PTX literals.
HEADER_SUFFIXES = (".hpp", ".h")

# g++: "fatal error: clblast.h: No such file or directory"; clang++ and nvcc's
# front end: "fatal error: 'clblast.h' file not found" / "cannot open source file".
MISSING_RE = re.compile(r"fatal error: (?:'([^']+)' file not found|([^:\s]+): No such file or directory)"
                        r"|catastrophic error: cannot open source file \"([^\"]+)\"")
# A header that states a macro it needs ("#if !defined(X)" then "#error"), like
# src.hpp's STREAMEXECUTOR_SEPARATE_COMPILATION, is compiled with it defined.
REQUIRED_MACRO_RE = re.compile(r"^#if !defined\((\w+)\)\s*\n#error", re.MULTILINE)
# A header that refuses to compile without a library ("#if !__has_include(<X>)"
# then "#error", like rng.hpp) is skipped when X is one the build did not find.
REQUIRED_HEADER_RE = re.compile(r"^#if !__has_include\(<([^>]+)>\)\s*\n#error", re.MULTILINE)


def find_headers(include: pathlib.Path, only: list[str]) -> list[str]:
    root = include / "streamexecutor"
    names = sorted(str(p.relative_to(include)) for p in root.rglob("*")
                   if p.is_file() and p.suffix in HEADER_SUFFIXES)
    if only:
        names = [n for n in names if any(n.startswith("streamexecutor/" + prefix) for prefix in only)]
    return names


def check_one(name: str, include: pathlib.Path, command: list[str], nvcc: bool, missing: dict[str, str],
              workdir: str) -> tuple[str, str, str, float]:
    """Returns (name, 'ok' | 'skip' | 'fail', detail, seconds)."""
    text = (include / name).read_text(encoding="utf-8")
    defines = [f"-D{macro}=1" for macro in REQUIRED_MACRO_RE.findall(text)]
    unit = pathlib.Path(workdir) / (name.replace("/", "__") + (".cu" if nvcc else ".cpp"))
    unit.write_text(f'#include "{name}"\n', encoding="utf-8")
    if nvcc:
        args = command + NVCC_FLAGS + defines + ["-c", str(unit), "-o", os.devnull]
    else:
        args = command + FLAGS + defines + [str(unit)]
    start = time.monotonic()
    result = subprocess.run(args, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode == 0:
        return name, "ok", "", seconds
    found = MISSING_RE.search(result.stderr)
    wanted = next((m for m in found.groups() if m), None) if found else None
    if wanted is None:
        wanted = next((h for h in REQUIRED_HEADER_RE.findall(text) if h in missing), None)
    if wanted in missing:
        return name, "skip", f"needs <{wanted}> ({missing[wanted]}), which this build did not find", seconds
    return name, "fail", f"{' '.join(args)}\n{result.stderr[-6000:]}", seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("include", type=pathlib.Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--nvcc", action="store_true")
    parser.add_argument("--missing", action="append", default=[])
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    options = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        parser.error("no compiler command after --")
    include = options.include.resolve()
    missing = dict(entry.split("=", 1) for entry in options.missing)

    headers = find_headers(include, options.only)
    if not headers:
        print(f"no headers under {include / 'streamexecutor'} matching {options.only or 'anything'}")
        return 1

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="se_headers_") as workdir, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        results = list(pool.map(lambda name: check_one(name, include, command, options.nvcc, missing, workdir),
                                headers))
    elapsed = time.monotonic() - start

    failed = [r for r in results if r[1] == "fail"]
    skipped = [r for r in results if r[1] == "skip"]
    for name, _, detail, _ in failed:
        print(f"FAIL {name} does not compile on its own:\n{detail}\n")
    for name, _, detail, _ in skipped:
        print(f"SKIP {name}: {detail}")
    slowest = sorted(results, key=lambda r: r[3], reverse=True)[:3]
    flags = " ".join(NVCC_FLAGS if options.nvcc else FLAGS)
    print(f"{command[0]}: {len(results) - len(failed) - len(skipped)} of {len(results)} headers compile alone under {flags}, "
          f"{len(skipped)} skipped, {len(failed)} failed; {elapsed:.0f} s with {options.jobs} jobs "
          f"(slowest: {', '.join(f'{n} {s:.1f} s' for n, _, _, s in slowest)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
