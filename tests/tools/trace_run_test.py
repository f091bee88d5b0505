#!/usr/bin/env python3
"""Traces of real programs (docs/tracing.md), read back.

trace_run_test.py PIPELINE TRACE_AT_EXIT TRACE_PLOT

- examples/pipeline under STREAMEXECUTOR_TRACE on two PoCL devices: the
  trace is valid JSON with one lane per stream on three executors, the
  operations of each kind, device times in stream order on each lane, and
  flows from records to waits across executors; tools/trace_plot.py draws it
  (where matplotlib is installed).
- STREAMEXECUTOR_TRACE naming an unwritable path: the program runs as
  without it and says why there is no trace.
- trace::Start without trace::Stop, and the environment's trace, left to
  the program's exit: a message, and a valid file with every operation.
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(command, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        fail(f"{command} exited {result.returncode}: {result.stdout}{result.stderr}")
    return result


def lanes_of(trace):
    names = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return names


def operations(trace):
    ops = {}
    for e in trace["traceEvents"]:
        if e.get("ph") in ("X", "i"):
            ops.setdefault((e["pid"], e["tid"]), []).append(e)
    for lane in ops.values():
        lane.sort(key=lambda e: e["args"]["op"])
    return ops


def check_pipeline(pipeline, plot, directory):
    path = os.path.join(directory, "pipeline.json")
    result = run([pipeline], {"POCL_DEVICES": "pthread pthread", "STREAMEXECUTOR_TRACE": path})
    if f"written to {path} (STREAMEXECUTOR_TRACE)" not in result.stderr:
        fail(f"no message about the trace: {result.stderr!r}")
    with open(path) as f:
        trace = json.load(f)
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
    labels = sorted(processes.values())
    if len(labels) != 3 or not labels[0].startswith("host") or not all(l.startswith("opencl:") for l in labels[1:]):
        fail(f"executors: {labels}")
    lanes = {k: v for k, v in lanes_of(trace).items() if v.startswith("stream ")}
    if len(lanes) != 4:
        fail(f"expected the pipeline's 4 streams, got {lanes}")
    ops = operations(trace)
    kinds = {e["cat"] for lane in ops.values() for e in lane}
    for kind in ("launch", "memcpy_h2d", "memcpy_d2h", "wait", "host_callback"):
        if kind not in kinds:
            fail(f"no {kind} operation in {sorted(kinds)}")
    launches = sorted(e["name"] for lane in ops.values() for e in lane if e["cat"] == "launch")
    if launches != ["add_one"] * 8 + ["produce"] * 8 + ["square"] * 8:
        fail(f"launches: {launches}")
    memory = [e for lane, events in ops.items() if lane not in lanes for e in events]
    if not memory or any(e["cat"] != "allocation" for e in memory):
        fail(f"the executors' memory lanes: {[(e['cat'], e['name']) for e in memory]}")
    ops = {lane: events for lane, events in ops.items() if lane in lanes}
    for lane, events in ops.items():
        end = 0.0
        for e in events:
            if e["ph"] != "X":
                fail(f"{e['name']} on {lanes[lane]} has no device time: {e['args']}")
            if e["ts"] < end - 1e-3 or e["ts"] < e["args"]["enqueue_us"] - 1e-3:
                fail(f"{e['name']} on {lanes[lane]} starts at {e['ts']}, before {max(end, e['args']['enqueue_us'])}")
            end = e["ts"] + e["dur"]
    starts = {e["id"]: e for e in trace["traceEvents"] if e.get("ph") == "s"}
    ends = [e for e in trace["traceEvents"] if e.get("ph") == "f"]
    if len(ends) < 8 or len(starts) != len(ends):
        fail(f"{len(starts)} flow starts and {len(ends)} ends")
    across = sum(1 for e in ends if starts[e["id"]]["pid"] != e["pid"])
    if across < 8:
        fail(f"only {across} flows cross executors")
    counters = trace["otherData"]["counters"]
    copied = sum(c["bytes_h2d"] for c in counters if "tid" not in c)
    if copied != 2 * 8 * (1 << 18) * 4:
        fail(f"bytes copied host to device: {copied}")
    if plot:
        png = os.path.join(directory, "pipeline.png")
        drawn = subprocess.run([sys.executable, plot, path, "-o", png], capture_output=True, text=True)
        if drawn.returncode != 0 or os.path.getsize(png) < 10000:
            fail(f"trace_plot.py on the pipeline's trace: {drawn.stderr}")
    print(f"pipeline: {sum(len(l) for l in ops.values())} operations on {len(lanes)} lanes, {len(ends)} flows "
          f"({across} across executors)")


def check_unwritable(pipeline):
    result = run([pipeline], {"POCL_DEVICES": "pthread pthread",
                              "STREAMEXECUTOR_TRACE": "/nonexistent-directory/trace.json"})
    expected = "STREAMEXECUTOR_TRACE: trace::Start('/nonexistent-directory/trace.json'): cannot open the file"
    if expected not in result.stderr or "the program runs without a trace" not in result.stderr:
        fail(f"unwritable path: {result.stderr!r}")
    if "every batch matches" not in result.stdout:
        fail(f"the pipeline did not run as without a trace: {result.stdout!r}")
    print("unwritable path: message given, program unaffected")


def check_exit(program, directory, mode):
    path = os.path.join(directory, f"exit_{mode}.json")
    if mode == "open":
        result = run([program, "open", path], {"STREAMEXECUTOR_TRACE": ""})
        expected = f"the trace to {path} was still recording at exit (trace::Start without trace::Stop)"
    else:
        result = run([program, "env"], {"STREAMEXECUTOR_TRACE": path})
        expected = f"written to {path} (STREAMEXECUTOR_TRACE)"
    if expected not in result.stderr:
        fail(f"{mode}: no message at exit: {result.stderr!r}")
    with open(path) as f:
        trace = json.load(f)
    names = {v.split("'")[1]: k for k, v in lanes_of(trace).items() if "'" in v}
    ops = operations(trace)
    early = [e["cat"] for e in ops.get(names.get("early"), [])]
    late = [e["cat"] for e in ops.get(names.get("late"), [])]
    if early != ["memcpy_h2d", "record_event", "host_callback"] or late != ["wait", "memcpy_d2h"]:
        fail(f"{mode}: early {early}, late {late}")
    print(f"{mode}: trace complete at exit")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    pipeline, at_exit, plot = sys.argv[1:]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: the pipeline's trace is not drawn")
        plot = None
    with tempfile.TemporaryDirectory() as directory:
        check_pipeline(pipeline, plot, directory)
        check_unwritable(pipeline)
        check_exit(at_exit, directory, "open")
        check_exit(at_exit, directory, "env")
    return 0


if __name__ == "__main__":
    sys.exit(main())
