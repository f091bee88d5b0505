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

  gpu_check.py cases EXECUTABLE [--timeout S] [--log FILE]
      Runs each test case of a Catch2 executable in a process of its own:
      one device fault (a sticky CUDA error) ends the process that caused
      it, so the cases after it are still tried. One line per case that
      did not pass, its output in FILE, then 'cases: P passed, F failed'.
"""
import argparse
import json
import os
import re
import subprocess
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
                # Newer Meson names a test "SUITES - PROJECT:NAME" in the log.
                may_skip = any(name == m or name.endswith(":" + m) for m in args.may_skip)
                if args.gpus > 0 and not may_skip:
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


def catch_spec(name):
    """A Catch2 test spec that matches the one case called `name`."""
    return re.sub(r'([\\\[\],*"~])', r"\\\1", name)


def cases(args):
    exe = os.path.realpath(args.executable)
    listing = subprocess.run([exe, "--list-test-names-only"], capture_output=True, text=True, check=False)
    names = [line for line in listing.stdout.splitlines() if line.strip()]
    if not names:
        print(f"cases: {exe} listed no test case (exit {listing.returncode})")
        return 1
    passed, failed = 0, []
    with open(args.log, "w", encoding="utf-8") as log:
        for name in names:
            try:
                run = subprocess.run([exe, catch_spec(name)], capture_output=True, text=True, timeout=args.timeout,
                                     check=False)
                verdict, output = run.returncode, run.stdout + run.stderr
            except subprocess.TimeoutExpired as expired:
                verdict, output = f"timeout after {args.timeout} s", str(expired.stdout or "")
            # The listing also holds what the executable prints first (the
            # suite's banner), which matches no case.
            if verdict == 0 and "No test cases matched" in output:
                continue
            if verdict == 0:
                passed += 1
                continue
            failed.append(name)
            print(f"  FAIL {name} (exit {verdict})")
            log.write(f"==== {name} (exit {verdict})\n{output}\n")
    print(f"cases: {passed} passed, {len(failed)} failed (one process each; output of the failures in {args.log})")
    return 1 if failed else 0


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
    c = commands.add_parser("cases")
    c.add_argument("executable")
    c.add_argument("--timeout", type=int, default=120)
    c.add_argument("--log", default=os.devnull)
    args = parser.parse_args()
    if args.command == "cases":
        return cases(args)
    if args.command == "targets":
        targets(args)
        return 0
    return summary(args)


if __name__ == "__main__":
    sys.exit(main())
