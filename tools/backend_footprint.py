#!/usr/bin/env python3
"""How many existing files a backend or a canned family touches outside its
own places: the files of code and build that name it (its tag, or the tag in
capitals as in STREAMEXECUTOR_WITH_<TAG>): the code under include/ and tools/,
and the build files (meson.build, meson_options.txt, CMakeLists.txt, cmake/),
which a new backend or family must touch to be built, installed and
registered.

A backend's own places: include/streamexecutor/<tag>/, its public header
include/streamexecutor/<tag>.hpp, tests/<tag>/ and docs/<tag>.md. Its canned
plugins are listed apart, not counted: each is a file of the family's own
folder (canned/<family>/<tag>.hpp, and the files there that only it uses)
and the family header's one #include of it, the family's registration of a
plugin, as streamexecutor.hpp's line is a backend's. A family's:
include/streamexecutor/canned/<tag>/, include/streamexecutor/<tag>.hpp,
tests/canned/<tag>*, docs/<tag>.md. Documentation (docs/, README.md,
CHANGELOG.md, CONTRIBUTING.md) and uses (tests/, examples/, benchmarks/) are
listed but not counted: docs/architecture.md says which files a new backend
touches, and tests, examples and benchmarks that run a backend by name (their
meson.build files registering them included, and the kernels they give it)
are uses of it, not registrations.

Usage: backend_footprint.py SOURCE_ROOT TAG [--family] [--max N]
Exits 1 when --max is given and the count is above it."""
import argparse
import pathlib
import re
import subprocess
import sys

DOCS = ("docs/", "README.md", "CHANGELOG.md", "CONTRIBUTING.md")
USES = ("tests/", "examples/", "benchmarks/")


def own_places(tag: str, family: bool) -> tuple:
    if family:
        return (f"include/streamexecutor/canned/{tag}/", f"include/streamexecutor/{tag}.hpp",
                f"tests/canned/{tag}", f"docs/{tag}.md")
    return (f"include/streamexecutor/{tag}/", f"include/streamexecutor/{tag}.hpp", f"tests/{tag}/",
            f"docs/{tag}.md")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("tag")
    parser.add_argument("--family", action="store_true")
    parser.add_argument("--max", type=int)
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    listed = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True)
    if listed.returncode == 0:
        files = listed.stdout.split()
    else:  # not a clone (a release tarball): every file but build output
        files = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.is_file() and not any(part.startswith(("build", ".")) for part in p.relative_to(root).parts)]
    pattern = re.compile(rf"\b({re.escape(args.tag)}|{re.escape(args.tag.upper())})\b")
    own = own_places(args.tag, args.family)
    # The backend's canned plugins: the families whose folder has <tag>.hpp.
    plugin_families = set()
    if not args.family:
        for name in files:
            parts = name.split("/")
            if len(parts) == 5 and parts[:3] == ["include", "streamexecutor", "canned"] and parts[4] == f"{args.tag}.hpp":
                plugin_families.add(parts[3])
    plugin_folders = tuple(f"include/streamexecutor/canned/{family}/" for family in sorted(plugin_families))
    plugin_headers = {f"include/streamexecutor/{family}.hpp" for family in plugin_families}
    touched, documents, tests, plugins = [], [], [], []
    for name in files:
        if name.startswith(own) or name == "tools/backend_footprint.py":
            continue
        try:
            text = (root / name).read_text(errors="replace")
        except (IsADirectoryError, FileNotFoundError):
            continue
        if not pattern.search(text):
            continue
        if name.startswith(plugin_folders) or name in plugin_headers:
            plugins.append(name)
        elif name.startswith(DOCS):
            documents.append(name)
        elif name.startswith(USES):
            tests.append(name)
        else:
            touched.append(name)
    print(f"{args.tag}: {len(touched)} files of code and build outside its own places")
    for name in touched:
        print(f"  {name}")
    if plugins:
        print(f"and its canned plugins ({', '.join(sorted(plugin_families))}), in the families' own places "
              f"and their headers' #include lines: {', '.join(plugins)}")
    if tests:
        print(f"and {len(tests)} test, example and benchmark files that name it: {', '.join(tests)}")
    if documents:
        print(f"and {len(documents)} documents: {', '.join(documents)}")
    if args.max is not None and len(touched) > args.max:
        print(f"FAIL: more than {args.max}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
