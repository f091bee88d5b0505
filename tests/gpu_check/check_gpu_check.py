#!/usr/bin/env python3
"""What CI can check of the lent-GPU tools (docs/cuda.md, "The day a GPU is
lent") without a GPU, a network or a debootstrap:

  shell     tools/gpu_{prepare,check,rehearse}.sh parse (bash -n) and, where
            shellcheck is installed, have no finding of severity warning.
  start     gpu_check.sh without its dependency folder stops at once with the
            command that makes it, exit status 2, and a log under $OUT whose
            last line is the summary.
  summary   gpu_check.py's verdicts on Meson test logs: a skip is a skip
            without a GPU and a failure with one (the no-driver test aside),
            FAIL, TIMEOUT and ERROR fail, a missing log fails.
  targets   (BUILD given, CUDA enabled) the targets gpu_check.py picks for the
            suite cuda exist in BUILD's ninja file and include what the GPU
            tests run: the generic suite, the counting double and the PTX.

Usage: check_gpu_check.py SOURCE_ROOT [BUILD_DIR NINJA]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def shell(root):
    scripts = [os.path.join(root, "tools", name) for name in ("gpu_prepare.sh", "gpu_check.sh", "gpu_rehearse.sh")]
    for script in scripts:
        result = subprocess.run(["bash", "-n", script], capture_output=True, text=True)
        check(result.returncode == 0, f"bash -n {os.path.basename(script)} {result.stderr.strip()}")
    shellcheck = shutil.which("shellcheck")
    if shellcheck:
        result = subprocess.run([shellcheck, "-S", "warning"] + scripts, capture_output=True, text=True)
        check(result.returncode == 0, "shellcheck -S warning: " + (result.stdout.strip() or "no finding"))
    else:
        print("note shellcheck is not installed: bash -n only")


def start(root):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, OUT=out, SE_GPU_CHECK_WORK=os.path.join(out, "work"))
        result = subprocess.run([os.path.join(root, "tools", "gpu_check.sh"), os.path.join(out, "no-deps")],
                                capture_output=True, text=True, env=env)
        check(result.returncode == 2, f"gpu_check.sh without its folder exits 2 (got {result.returncode})")
        log_path = os.path.join(out, "gpu_check.log")
        log = open(log_path, encoding="utf-8").read() if os.path.exists(log_path) else ""
        check("run tools/gpu_prepare.sh" in log, "the log names the command that makes the folder")
        last = log.strip().splitlines()[-1] if log.strip() else ""
        check(last.startswith("gpu_check: 0 passed, 1 failed, 0 skipped"), f"the log ends in the summary: {last!r}")


def verdicts(results, *extra):
    with tempfile.TemporaryDirectory() as build:
        if results is not None:
            os.makedirs(os.path.join(build, "meson-logs"))
            with open(os.path.join(build, "meson-logs", "testlog.json"), "w", encoding="utf-8") as log:
                for name, result, stdout in results:
                    log.write(json.dumps({"name": name, "result": result, "stdout": stdout, "duration": 1.0}) + "\n")
        here = os.path.dirname(os.path.abspath(__file__))
        tool = os.path.join(here, "..", "..", "tools", "gpu_check.py")
        result = subprocess.run([sys.executable, tool, "summary", build, *extra], capture_output=True, text=True)
        return result.returncode, result.stdout.strip().splitlines()[-1], result.stdout


def summary():
    no_device = "SKIPPED: the cuda platform has no device: no CUDA driver"
    runs = [("cuda ptx signature", "OK", "All tests passed"), ("generic cuda", "SKIP", no_device),
            ("cuda no driver", "SKIP", "SKIPPED: a CUDA driver is installed system-wide")]
    status, last, text = verdicts(runs)
    check(status == 0 and last == "tests: 1 passed, 0 failed, 2 skipped", f"no GPU: skips are skips ({last})")
    check(no_device in text, "a skip's reason is in the report")
    status, last, _ = verdicts(runs, "--gpus", "1", "--may-skip", "cuda no driver")
    check(status == 1 and last == "tests: 1 passed, 1 failed, 1 skipped",
          f"one GPU: generic cuda's skip fails, the no-driver test's does not ({last})")
    status, last, text = verdicts([("a", "OK", ""), ("b", "FAIL", ""), ("c", "TIMEOUT", ""), ("d", "ERROR", "")])
    check(status == 1 and last == "tests: 1 passed, 3 failed, 0 skipped", f"FAIL, TIMEOUT, ERROR fail ({last})")
    check(text.splitlines()[0].startswith("  FAIL b"), "failures are listed first")
    status, last, _ = verdicts(None)
    check(status == 1 and last == "tests: 0 passed, 1 failed, 0 skipped", f"no test log fails ({last})")


def targets(root, build, ninja):
    picked = subprocess.run([sys.executable, os.path.join(root, "tools", "gpu_check.py"), "targets", build, "cuda",
                             "cuda_launch_bench"], capture_output=True, text=True, check=True).stdout.split()
    known = subprocess.run([ninja, "-C", build, "-t", "targets", "all"], capture_output=True, text=True,
                           check=True).stdout
    known = {line.split(":")[0] for line in known.splitlines()}
    unknown = [path for path in picked if path not in known]
    check(not unknown, f"{len(picked)} targets picked, all known to ninja {unknown}")
    needed = ["tests/generic_cuda", "tests/cuda/counting_double/libcuda.so.1", "tests/cuda/test_kernels.ptx",
              "examples/saxpy.ptx"]
    if "benchmarks/cuda_launch_bench" in known:  # -Dbenchmarks=true
        needed.append("benchmarks/cuda_launch_bench")
    for path in needed:
        check(path in picked, f"picked: {path}")
    check("tests/generic_host" not in picked, "not picked: tests/generic_host (no test of the suite cuda runs it)")


def main():
    root = sys.argv[1]
    shell(root)
    start(root)
    summary()
    if len(sys.argv) > 3:
        targets(root, sys.argv[2], sys.argv[3])
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
