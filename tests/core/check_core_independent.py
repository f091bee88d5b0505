#!/usr/bin/env python3
"""The core templates must not depend on any backend, nor on the canned
operations built on them (BLAS, ...): each header under
include/streamexecutor/core/ is preprocessed alone (the compiler's -M list of
what it really includes) and may reach no file of a backend folder or of
include/streamexecutor/canned/."""
import pathlib
import subprocess
import sys

# Every folder beside core/ that is not shared code is a backend's: a new
# backend is checked without an edit here.
SHARED = ("core", "detail", "canned")
# Canned-operation libraries: their folder, and their public headers.
CANNED = ("/streamexecutor/canned/", "/streamexecutor/blas.hpp")


def main() -> int:
    include = pathlib.Path(sys.argv[1]).resolve()
    compiler = sys.argv[2:]
    failures = []
    backends = [d.name for d in (include / "streamexecutor").iterdir() if d.is_dir() and d.name not in SHARED]
    headers = sorted((include / "streamexecutor" / "core").glob("*.hpp"))
    if not headers:
        print(f"no core headers under {include}", file=sys.stderr)
        return 1
    for header in headers:
        result = subprocess.run(compiler + ["-std=c++20", f"-I{include}", "-M", "-x", "c++", str(header)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            failures.append(f"{header.name}: does not compile alone:\n{result.stderr}")
            continue
        deps = result.stdout.replace("\\\n", " ").split()
        reached = sorted({d for d in deps
                          for b in backends if f"/streamexecutor/{b}/" in d or d.endswith(f"/streamexecutor/{b}.hpp")} |
                         {d for d in deps for c in CANNED if c in d})
        if reached:
            failures.append(f"{header.name} includes backend or canned-operation code: {', '.join(reached)}")
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"{len(headers)} core headers checked, {len(failures)} depend on a backend")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
