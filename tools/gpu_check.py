#!/usr/bin/env python3
"""The parts of tools/gpu_check.sh that read Meson's JSON.

  gpu_check.py targets BUILD SUITE [NAME ...]
      The ninja targets (paths relative to BUILD) that the tests of SUITE
      need, the custom targets built by default (the PTX that executables
      name by path, not by dependency), and the targets called NAME that
      exist (benchmarks). Building only these keeps the GPU machine's build
      to what its tests run.

  gpu_check.py summary BUILD [--gpus N] [--may-skip NAME ...]
      Reads BUILD/meson-logs/testlog.json: one line per test that did not
      pass (with a skip's reason), then 'tests: P passed, F failed, S skipped'.
      With N > 0 GPUs, a skip other than the --may-skip ones is a failure:
      on a GPU machine a CUDA test has no reason to skip. Exit status 1 when
      anything failed, 0 otherwise.
"""
import argparse
import json
import os
import sys


def load(build, name):
    with open(os.path.join(build, "meson-info", name), encoding="utf-8") as f:
        return json.load(f)


def targets(args):
    build = os.path.realpath(args.build)
    by_id = {t["id"]: t for t in load(build, "intro-targets.json")}
    suite = args.suite
    chosen = []
    for test in load(build, "intro-tests.json"):
        # Suites are "project:suite" in the introspection.
        if any(s.split(":")[-1] == suite for s in test["suite"]):
            chosen.extend(test["depends"])
    if not chosen:
        sys.exit(f"gpu_check.py: no test of suite '{suite}' in {build}")
    for target in by_id.values():
        if (target["type"] == "custom" and target["build_by_default"]) or target["name"] in args.names:
            chosen.append(target["id"])
    paths = []
    for target_id in dict.fromkeys(chosen):
        for filename in by_id[target_id]["filename"]:
            path = os.path.relpath(filename, build)
            if path not in paths:
                paths.append(path)
    print("\n".join(paths))


def summary(args):
    path = os.path.join(args.build, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        print(f"tests: none ran ({path} is missing)")
        print("tests: 0 passed, 1 failed, 0 skipped")
        return 1
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    lines = []
    with open(path, encoding="utf-8") as log:
        for line in log:
            result = json.loads(line)
            name, verdict = result["name"], result["result"]
            output = (result.get("stdout") or "").strip().splitlines()
            reason = next((l for l in reversed(output) if "SKIP" in l.upper()), output[-1] if output else "")
            if verdict in ("OK", "EXPECTEDFAIL"):
                counts["passed"] += 1
            elif verdict == "SKIP":
                if args.gpus > 0 and name not in args.may_skip:
                    counts["failed"] += 1
                    lines.append(f"  FAIL (skipped on a machine with {args.gpus} GPU(s)) {name}: {reason.strip()}")
                else:
                    counts["skipped"] += 1
                    lines.append(f"  SKIP {name}: {reason.strip()}")
            else:
                counts["failed"] += 1
                lines.append(f"  {verdict} {name} ({result.get('duration', 0):.1f} s)")
    print("\n".join(sorted(lines, key=lambda l: not l.lstrip().startswith(("FAIL", "TIMEOUT", "ERROR"))))
          or "  every test passed")
    print(f"tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("targets")
    t.add_argument("build")
    t.add_argument("suite")
    t.add_argument("names", nargs="*")
    s = commands.add_parser("summary")
    s.add_argument("build")
    s.add_argument("--gpus", type=int, default=0)
    s.add_argument("--may-skip", nargs="*", default=[])
    args = parser.parse_args()
    if args.command == "targets":
        targets(args)
        return 0
    return summary(args)


if __name__ == "__main__":
    sys.exit(main())
