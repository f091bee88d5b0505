#!/usr/bin/env python3
"""Compile-fail test: compiles SOURCE with the given compiler command and
passes only if compilation fails with the message named on the source's
`// expect:` line (so that an unrelated error, like a missing include, fails)."""
import subprocess
import sys


def main() -> int:
    source, command = sys.argv[1], sys.argv[2:]
    expected = None
    with open(source, encoding="utf-8") as f:
        for line in f:
            if line.startswith("// expect:"):
                expected = line[len("// expect:"):].strip()
    if not expected:
        print(f"{source}: no '// expect:' line")
        return 1
    result = subprocess.run(command + ["-fsyntax-only", source], capture_output=True, text=True)
    if result.returncode == 0:
        print(f"{source}: compiled, but should have failed with: {expected}")
        return 1
    if expected not in result.stderr:
        print(f"{source}: failed without the expected message: {expected}\n--- compiler output ---")
        print(result.stderr[-4000:])
        return 1
    print(f"{source}: rejected as expected: {expected}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
