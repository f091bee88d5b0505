#!/usr/bin/env python3
"""Bad kernel files must fail the generator with FILE:LINE: error naming the
line marked `// error-line`, and leave no header behind.
Usage: check_errors.py PYTHON SCRIPT [--nvcc NVCC] [--glslang GLSLANG] FILE..."""
import os
import subprocess
import sys
import tempfile


def main() -> int:
    python, script, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    tools = []  # the compilers the script is given, as option-value pairs
    while rest[:1] in (["--nvcc"], ["--glslang"]):
        tools, rest = tools + rest[:2], rest[2:]
    failures = 0
    for path in rest:
        with open(path, encoding="utf-8") as f:
            line = next(n for n, text in enumerate(f, 1) if "error-line" in text)
        with tempfile.TemporaryDirectory() as scratch:
            output = os.path.join(scratch, "out.h")
            result = subprocess.run([python, script, path, "-o", output] + tools, capture_output=True, text=True)
            expected = f"{path}:{line}:"
            problems = []
            if result.returncode == 0:
                problems.append("exited 0")
            if not any(text.startswith(expected) and ": error:" in text for text in result.stderr.splitlines()):
                problems.append(f"no '{expected} ... error:' line")
            if os.path.exists(output):
                problems.append("wrote a header")
        if problems:
            failures += 1
            print(f"{path}: {', '.join(problems)}\n--- stderr ---\n{result.stderr}")
        else:
            print(f"{path}: rejected at line {line}: {result.stderr.splitlines()[0]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
