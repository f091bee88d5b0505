#!/usr/bin/env python3
"""Strict-warnings test: compiles strict_warnings.cpp, which instantiates the
public templates, with the flags careful consumers use, and fails on any
warning. Usage: check.py SOURCE COMPILER [ARGS...]"""
import subprocess
import sys

FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wconversion", "-Werror", "-fsyntax-only"]


def main() -> int:
    source, command = sys.argv[1], sys.argv[2:]
    result = subprocess.run(command + FLAGS + [source], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"{' '.join(command[:1])}: warnings or errors under {' '.join(FLAGS)}\n{result.stderr[-8000:]}")
        return 1
    print(f"{command[0]}: clean under {' '.join(FLAGS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
