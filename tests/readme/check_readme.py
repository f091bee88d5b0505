#!/usr/bin/env python3
"""README test: the first ```cpp block of README.md must be a complete program
that compiles warning-free with -Wall -Wextra -Werror and prints the result
the README promises. Usage: check_readme.py README OUTDIR COMPILER [ARGS...]"""
import pathlib
import re
import subprocess
import sys

EXPECTED = "42.5 + 123.0 = 165.5"


def main() -> int:
    readme, outdir, command = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
    match = re.search(r"```cpp\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    if not match:
        print(f"{readme}: no ```cpp block")
        return 1
    outdir.mkdir(parents=True, exist_ok=True)
    source, binary = outdir / "readme_example.cpp", outdir / "readme_example"
    source.write_text(match.group(1), encoding="utf-8")
    flags = ["-std=c++20", "-Wall", "-Wextra", "-Werror"]
    build = subprocess.run(command[:1] + flags + [str(source), "-o", str(binary)] + command[1:],
                           capture_output=True, text=True)
    if build.returncode != 0:
        print(f"the README example does not compile with {' '.join(flags)}:\n{build.stderr[-6000:]}")
        return 1
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    if run.returncode != 0 or EXPECTED not in run.stdout:
        print(f"the README example exited {run.returncode} and printed:\n{run.stdout}{run.stderr}")
        return 1
    print(f"README example: compiled with {' '.join(flags)}, printed '{run.stdout.strip()}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
