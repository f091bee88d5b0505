#!/usr/bin/env python3
"""Strict-warnings test: compiles strict_warnings.cpp, which instantiates the
public templates, with the flags careful consumers use, and fails on any
warning. Usage: check.py [--optimize] SOURCE COMPILER [ARGS...]

By default only the front end runs (-fsyntax-only). With --optimize the unit
is compiled to code at -O3: the warnings g++ gives only after inlining
(-Wstringop-overflow, -Wmaybe-uninitialized) come from that stage."""
import os
import subprocess
import sys

# tests/headers/check_headers.py compiles every header with these flags too.
FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wconversion", "-Werror", "-fsyntax-only"]


def main() -> int:
    arguments = sys.argv[1:]
    optimize = arguments[:1] == ["--optimize"]
    if optimize:
        arguments = arguments[1:]
    source, command = arguments[0], arguments[1:]
    flags = ([flag for flag in FLAGS if flag != "-fsyntax-only"] + ["-O3", "-c", "-o", os.devnull]) if optimize else FLAGS
    result = subprocess.run(command + flags + [source], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"{' '.join(command[:1])}: warnings or errors under {' '.join(flags)}\n{result.stderr[-8000:]}")
        return 1
    print(f"{command[0]}: clean under {' '.join(flags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
