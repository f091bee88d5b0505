#!/usr/bin/env python3
"""Every capability concept (a `concept <Name>Backend`) is declared in
include/streamexecutor/core/backend.hpp or named in its index, so that a
newcomer finds every capability a backend may have in one file."""
import pathlib
import re
import sys


def main() -> int:
    include = pathlib.Path(sys.argv[1]) / "streamexecutor"
    index = (include / "core" / "backend.hpp").read_text()
    declared = re.compile(r"^concept\s+(\w+Backend)\b", re.MULTILINE)
    missing = []
    count = 0
    for header in sorted(include.rglob("*.hpp")):
        for name in declared.findall(header.read_text()):
            count += 1
            if not re.search(rf"\b{name}\b", index):
                missing.append(f"{name} ({header.relative_to(include.parent)})")
    for name in missing:
        print(f"not in core/backend.hpp or its index: {name}", file=sys.stderr)
    print(f"{count} capability concepts, {len(missing)} missing from core/backend.hpp")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
