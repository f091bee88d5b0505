#!/usr/bin/env bash
# Builds and runs the whole benchmark suite, then prints the table of ratios
# and draws docs/performance.png. About 3.5 minutes on the 2-core machines.
#
#   benchmarks/run.sh [RESULTS_DIR]      (default build-bench/results)
#
# Prerequisites (Debian 12), besides the project's own .ci/packages:
#   apt-get install -y libbenchmark-dev libtbb-dev valgrind python3-matplotlib
# Set SE_BENCH_REPETITIONS / SE_BENCH_MIN_TIME to trade time for precision.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build=build-bench
results="${1:-$build/results}"
reps="${SE_BENCH_REPETITIONS:-5}"
min_time="${SE_BENCH_MIN_TIME:-0.1}"

# matplotlib may be Debian's (python3-matplotlib) while python3 is another one.
python=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  python=/usr/bin/python3
fi

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dbenchmarks=true -Dtests=disabled -Dexamples=disabled --buildtype=release
else
  meson configure "$build" -Dbenchmarks=true >/dev/null
fi
meson compile -C "$build"
mkdir -p "$results"
rm -f "$results"/*.json

# The machine: what docs/performance.md quotes.
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "nproc: $(nproc)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "compiler: $(c++ --version | head -1)"
  if command -v clinfo >/dev/null; then
    echo "opencl: $(clinfo 2>/dev/null | grep -m1 'Platform Version' | sed 's/^ *Platform Version *//')"
  fi
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$results/machine.txt"
cat "$results/machine.txt"

# A/B pairs share one process; repetitions are interleaved at random so that
# a slow moment of the machine hits both sides of a pair alike.
elapsed() { echo "$(( $(date +%s) - start )) s"; }

run_bench() {
  local exe="$build/benchmarks/$1"
  [ -x "$exe" ] || { echo "skipping $1 (not built)"; return 0; }
  echo "== $1 at $(elapsed) (console output in $results/$1.log)"
  "$exe" --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="$min_time" --benchmark_report_aggregates_only=true \
    --benchmark_out="$results/$1.json" --benchmark_out_format=json > "$results/$1.log" 2>&1
}
run_bench host_bench
run_bench barrier_bench
run_bench opencl_launch_bench
run_bench copy_bench
run_bench rng_bench
run_bench fft_bench
# No GPU here: the CUDA launch path runs against the counting driver double.
with_double="$root/$build/tests/cuda/counting_double${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LD_LIBRARY_PATH="$with_double" run_bench cuda_launch_bench
LD_LIBRARY_PATH="$with_double" run_bench memory_pool_bench  # the CUDA pairs against the double
LD_LIBRARY_PATH="$with_double" run_bench command_buffer_bench  # CUDA against the double
# Collectives over MPI on 2 ranks, in a fixed order on every rank (no random interleaving).
if [ -x "$build/benchmarks/collectives_bench" ] && command -v mpiexec >/dev/null; then
  echo "== collectives_bench (2 ranks) at $(elapsed) (console output in $results/collectives_bench.log)"
  mpiexec -n 2 "$build/benchmarks/collectives_bench" --benchmark_repetitions="$reps" \
    --benchmark_report_aggregates_only=true --benchmark_out="$results/collectives_bench.json" \
    --benchmark_out_format=json > "$results/collectives_bench.log" 2>&1
fi

if command -v valgrind >/dev/null; then
  if [ -x "$build/benchmarks/opencl_launch_count" ]; then
    echo "== callgrind opencl at $(elapsed)"
    "$python" benchmarks/callgrind.py "$build/benchmarks/opencl_launch_count" "$results/callgrind.json" 512
  fi
  if [ -x "$build/benchmarks/cuda_launch_count" ]; then
    echo "== callgrind cuda at $(elapsed)"
    LD_LIBRARY_PATH="$with_double" "$python" benchmarks/callgrind.py "$build/benchmarks/cuda_launch_count" "$results/callgrind_cuda.json" 512
  fi
  if [ -x "$build/benchmarks/command_buffer_count" ]; then
    echo "== callgrind cuda command buffer at $(elapsed)"
    LD_LIBRARY_PATH="$with_double" "$python" benchmarks/callgrind.py "$build/benchmarks/command_buffer_count" "$results/callgrind_command_buffer.json" 128
  fi
fi

echo "== compile time at $(elapsed)"
cuda_include=""
for dir in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda /opt/cuda /usr; do
  if [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ]; then cuda_include="$dir/include"; break; fi
done
"$python" benchmarks/compile_time.py --include include --out "$results/compile_time.json" --runs 3 \
  --cuda-include "$cuda_include"

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results/machine.txt"
echo "== report at $(elapsed)"
"$python" benchmarks/report.py "$results" --png docs/performance.png --markdown "$results/summary.md"
