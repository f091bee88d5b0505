#!/usr/bin/env bash
# The one command for a lent GPU machine (docs/cuda.md, "The day a GPU is
# lent"): builds the dependencies that tools/gpu_prepare.sh put in DIR, then
# the CUDA backend's tests, examples and benchmarks with this machine's
# compiler and CUDA toolkit, runs the Meson suite `cuda` (the CUDA tests, the
# generic suite and the examples on CUDA, the doubles' tests) and the CUDA
# launch benchmark briefly, and writes one log ending in a summary.
#
#   tools/gpu_check.sh [DIR]          (default: gpu-deps, in the repository root)
#
# Needs only the repository, DIR, a C++ compiler, cmake, meson, ninja,
# python3 and the CUDA toolkit (nvcc on PATH, or in $CUDA_PATH, $CUDA_HOME or
# /usr/local/cuda). pkg-config is built from DIR where it is missing.
# The log: $OUT/gpu_check.log where $OUT is set, else build-gpu/gpu_check.log.
# Exit status: 0 all passed, 1 something failed, 2 it could not start.
#
# Settings (environment): SE_GPU_CHECK_WORK (build-gpu), SE_GPU_CHECK_JOBS (nproc),
# SE_GPU_CHECK_MESON_ARGS (extra `meson setup` options, e.g. -Dwerror=true),
# SE_GPU_CHECK_BENCH_MIN_TIME (0.05 s per benchmark).
set -u -o pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/gpu-deps}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
work="${SE_GPU_CHECK_WORK:-$root/build-gpu}"
jobs="${SE_GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}"
bench_min_time="${SE_GPU_CHECK_BENCH_MIN_TIME:-0.05}"
if [ -n "${OUT:-}" ]; then log="$OUT/gpu_check.log"; else log="$work/gpu_check.log"; fi
prefix="$work/prefix"
build="$work/build"
start=$(date +%s)

section() { echo; echo "==== $* ($(( $(date +%s) - start )) s)"; }
fail_setup() { echo "gpu_check: error: $*"; echo "gpu_check: 0 passed, 1 failed, 0 skipped (could not start: $*)"; exit 2; }

# A tool, or a clear message naming what is missing.
need() {
  command -v "$1" >/dev/null 2>&1 || fail_setup "$1 is not on PATH ($2)"
}

# Runs a step with its output in a file of its own; the log gets its last
# lines on failure only, so that a dependency's build does not drown the log.
quiet() {
  local name="$1"; shift
  if "$@" > "$work/logs/$name.txt" 2>&1; then return 0; fi
  echo "gpu_check: $name failed: $*"
  tail -n 40 "$work/logs/$name.txt"
  return 1
}

build_dependencies() {
  local manifest_hash
  manifest_hash="$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$dir/MANIFEST")"
  if [ -f "$prefix/.built-from" ] && [ "$(cat "$prefix/.built-from")" = "$manifest_hash" ]; then
    echo "already built in $prefix (same MANIFEST)"
    return 0
  fi
  rm -rf "$prefix" "$work/deps"
  mkdir -p "$prefix/include" "$prefix/lib/pkgconfig" "$work/deps"
  local src="$dir/src" cmake_common
  cmake_common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_CXX_COMPILER="$cxx")

  # pkgconf, only where no pkg-config exists: Meson finds the rest through it.
  if ! command -v pkg-config >/dev/null 2>&1; then
    local cc="${CC:-}"
    for candidate in gcc cc clang; do
      [ -z "$cc" ] && command -v "$candidate" >/dev/null 2>&1 && cc="$candidate"
    done
    [ -n "$cc" ] || { echo "gpu_check: pkg-config is missing and no C compiler (gcc, cc, clang) can build pkgconf"; return 1; }
    CC="$cc" quiet pkgconf-setup meson setup "$work/deps/pkgconf" "$src"/pkgconf-* --prefix="$prefix" \
      --libdir=lib -Dtests=false --buildtype=release &&
      quiet pkgconf-build ninja -C "$work/deps/pkgconf" -j "$jobs" install || return 1
    ln -sf pkgconf "$prefix/bin/pkg-config"
    echo "pkg-config: built $(basename "$src"/pkgconf-*) into $prefix/bin"
  fi

  quiet fmt-configure cmake -S "$src"/fmtlib-* -B "$work/deps/fmt" "${cmake_common[@]}" -DFMT_DOC=OFF -DFMT_TEST=OFF &&
    quiet fmt-build cmake --build "$work/deps/fmt" --target install -j "$jobs" || return 1
  quiet benchmark-configure cmake -S "$src"/benchmark-* -B "$work/deps/benchmark" "${cmake_common[@]}" \
    -DBENCHMARK_ENABLE_TESTING=OFF -DBENCHMARK_ENABLE_GTEST_TESTS=OFF -DBENCHMARK_ENABLE_WERROR=OFF \
    -DBENCHMARK_INSTALL_DOCS=OFF &&
    quiet benchmark-build cmake --build "$work/deps/benchmark" --target install -j "$jobs" || return 1

  # Catch2 2 is one header; Random123 is headers only.
  local catch2_dir version
  catch2_dir="$(ls -d "$src"/catch2-*)"
  version="${catch2_dir##*/catch2-}"
  cp -r "$catch2_dir/single_include/catch2" "$prefix/include/"
  # shellcheck disable=SC2016  # ${prefix} is pkg-config's variable
  printf 'prefix=%s\nincludedir=${prefix}/include\n\nName: Catch2\nDescription: Catch2 %s, single header\nVersion: %s\nCflags: -I${includedir}\n' \
    "$prefix" "$version" "$version" > "$prefix/lib/pkgconfig/catch2.pc"
  cp -r "$src"/random123-*/include/Random123 "$prefix/include/"

  # libboost_context as Boost's Jamfile builds it on x86_64 Linux (fcontext).
  local boost
  boost="$(ls -d "$src"/boost-context-*)"
  cp -r "$boost/include/boost" "$prefix/include/"
  mkdir -p "$work/deps/boost"
  local objects=()
  for source in "$boost"/src/asm/*.S "$boost"/src/posix/stack_traits.cpp; do
    local object
    object="$work/deps/boost/$(basename "$source").o"
    quiet "boost-$(basename "$source")" "$cxx" -c -O2 -fPIC -std=c++17 -DBOOST_CONTEXT_SOURCE \
      -DBOOST_DISABLE_ASSERTS -I"$prefix/include" "$source" -o "$object" || return 1
    objects+=("$object")
  done
  rm -f "$prefix/lib/libboost_context.a"
  quiet boost-ar ar rcs "$prefix/lib/libboost_context.a" "${objects[@]}" || return 1

  echo "$manifest_hash" > "$prefix/.built-from"
  echo "built into $prefix: fmt, Google Benchmark, libboost_context$( [ -x "$prefix/bin/pkgconf" ] && echo ', pkgconf');" \
    "headers of Catch2, Random123, Boost.Context"
  sed -n '3,$p' "$dir/MANIFEST" | cut -d' ' -f1-3 | sed 's/^/  from /'
}

main() {
  section "gpu_check on $(hostname) at $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "repository: $root"
  if command -v git >/dev/null 2>&1 && git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
    echo "commit: $(git -C "$root" log -1 --format='%h %s')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with changes)')"
  fi
  echo "deps: $dir"
  echo "work: $work, jobs: $jobs"
  [ -f "$dir/MANIFEST" ] || fail_setup "$dir/MANIFEST is missing: run tools/gpu_prepare.sh $dir on the development machine and carry $dir"

  section "tools"
  need python3 "the CUDA examples' wrapper and this script's summary need it"
  need cmake "it builds fmt and Google Benchmark from $dir"
  need meson "the project's build"
  need ninja "Meson's backend"
  cxx="${CXX:-}"
  for candidate in g++ c++ clang++; do
    [ -z "$cxx" ] && command -v "$candidate" >/dev/null 2>&1 && cxx="$candidate"
  done
  [ -n "$cxx" ] || fail_setup "no C++ compiler (\$CXX, g++, c++ or clang++)"
  export CXX="$cxx"
  local nvcc=""
  for candidate in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda /opt/cuda; do
    if [ -z "$nvcc" ] && [ -n "$candidate" ] && [ -x "$candidate/bin/nvcc" ]; then nvcc="$candidate/bin/nvcc"; fi
  done
  [ -n "$nvcc" ] || nvcc="$(command -v nvcc || true)"
  [ -n "$nvcc" ] || fail_setup "nvcc was not found in \$CUDA_PATH, \$CUDA_HOME, /usr/local/cuda, /opt/cuda or PATH"
  local cuda_root
  cuda_root="$(cd "$(dirname "$nvcc")/.." && pwd)"
  [ -f "$cuda_root/include/cuda.h" ] || fail_setup "$cuda_root/include/cuda.h is missing: set CUDA_PATH to the toolkit"
  export CUDA_PATH="$cuda_root" PATH="$cuda_root/bin:$PATH"
  echo "c++: $(command -v "$cxx"): $("$cxx" --version | head -n 1)"
  echo "nvcc: $nvcc: $("$nvcc" --version | tail -n 2 | head -n 1)"
  echo "cmake: $(cmake --version | head -n 1), meson $(meson --version), ninja $(ninja --version), $(python3 --version)"
  echo "pkg-config: $(command -v pkg-config || echo 'not found (built from the deps)')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc $(nproc)"

  section "GPU and driver"
  gpus=0
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi || true
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv || true
    gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
  else
    echo "nvidia-smi: not found"
  fi
  [ -r /proc/driver/nvidia/version ] && cat /proc/driver/nvidia/version
  if python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
    echo "libcuda.so.1: loads"
  else
    echo "libcuda.so.1: does not load here (no driver): the GPU-only tests will SKIP"
    gpus=0
  fi
  echo "GPUs usable: $gpus"

  mkdir -p "$work/logs"
  section "dependencies from $dir"
  local deps_start
  deps_start=$(date +%s)
  build_dependencies || { echo "gpu_check: 0 passed, 1 failed, 0 skipped (the dependencies did not build)"; return 1; }
  echo "dependencies: $(( $(date +%s) - deps_start )) s"
  [ -x "$prefix/bin/pkg-config" ] && export PATH="$prefix/bin:$PATH"
  # The prefix as a system folder (-isystem, no warnings of theirs), as the
  # Debian packages are on the development machines; the toolkit's libraries
  # (cuBLAS, cuFFT, cuRAND) for the canned plugins' dlopen.
  export CPLUS_INCLUDE_PATH="$prefix/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
  export LIBRARY_PATH="$prefix/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export PKG_CONFIG_SYSTEM_INCLUDE_PATH="$prefix/include:/usr/include"
  export LD_LIBRARY_PATH="$cuda_root/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  printf "[properties]\nboost_root = '%s'\n" "$prefix" > "$work/native.ini"

  section "configure"
  # OpenCL off (no CLHPP headers travel); werror off: warnings are CI's to
  # catch on the development machines, and one from a newer compiler here
  # must not cost the GPU run (the build's warnings are counted below).
  local setup_args=(--native-file "$work/native.ini" -Dcuda=enabled -Dopencl=disabled -Dhost=enabled
    -Dtests=enabled -Dexamples=enabled -Dbenchmarks=true -Dwerror=false)
  # shellcheck disable=SC2206  # word splitting of the extra options is wanted
  setup_args+=(${SE_GPU_CHECK_MESON_ARGS:-})
  if [ -f "$build/build.ninja" ]; then
    meson setup --reconfigure "$build" "${setup_args[@]}" || { echo "gpu_check: 0 passed, 1 failed, 0 skipped (meson setup failed)"; return 1; }
  else
    meson setup "$build" "$root" "${setup_args[@]}" || { echo "gpu_check: 0 passed, 1 failed, 0 skipped (meson setup failed)"; return 1; }
  fi

  section "build (the suite cuda's targets and the CUDA benchmarks, -j $jobs)"
  local targets build_start build_status=0
  build_start=$(date +%s)
  targets="$(python3 "$root/tools/gpu_check.py" targets "$build" cuda cuda_launch_bench)" || targets=""
  if [ -z "$targets" ]; then
    echo "gpu_check: no targets for the suite cuda"; build_status=1
  else
    echo "$(wc -l <<<"$targets") targets"
    # shellcheck disable=SC2086  # one target per word
    # The log keeps what the compilers said, not ninja's progress lines.
    ninja -C "$build" -j "$jobs" $targets 2>&1 | tee "$work/logs/build.txt" | grep --line-buffered -v '^\[[0-9]*/[0-9]*\] '
    build_status=${PIPESTATUS[0]}
  fi
  local warnings
  warnings="$(grep -c 'warning:' "$work/logs/build.txt" 2>/dev/null || true)"
  echo "build: status $build_status, ${warnings:-0} compiler warning line(s), $(( $(date +%s) - build_start )) s"

  local test_status=1
  if [ "$build_status" -eq 0 ]; then
    section "tests: meson test --suite cuda"
    local test_start
    test_start=$(date +%s)
    meson test -C "$build" --no-rebuild --suite cuda --print-errorlogs --num-processes "$jobs"
    test_status=$?
    echo "tests: status $test_status, $(( $(date +%s) - test_start )) s"
    # A device fault is sticky for the process's context and fails every case
    # after it: find each failing case of the generic suite on its own.
    if [ "$test_status" -ne 0 ] && [ -x "$build/tests/generic_cuda" ]; then
      section "generic cuda, one process per test case"
      local cases_log="$work/logs/generic_cuda_cases.txt"
      (cd "$build" && python3 "$root/tools/gpu_check.py" cases tests/generic_cuda --timeout 120 --log "$cases_log")
      [ -n "${OUT:-}" ] && cp "$cases_log" "$OUT/"
    fi
  fi

  local bench_ok=0 bench_failed=0 bench_skipped=0
  local bench="$build/benchmarks/cuda_launch_bench"
  if [ "$build_status" -eq 0 ] && [ -x "$bench" ]; then
    section "benchmarks: cuda_launch_bench, --benchmark_min_time=$bench_min_time"
    echo "-- against the counting driver double (the host-side cost; docs/performance.md pair 4)"
    if LD_LIBRARY_PATH="$build/tests/cuda/counting_double:$LD_LIBRARY_PATH" "$bench" \
        --benchmark_min_time="$bench_min_time"; then
      bench_ok=$((bench_ok + 1))
    else
      bench_failed=$((bench_failed + 1))
    fi
    if [ "$gpus" -gt 0 ]; then
      echo "-- against the real driver"
      if "$bench" --benchmark_min_time="$bench_min_time"; then bench_ok=$((bench_ok + 1)); else bench_failed=$((bench_failed + 1)); fi
    else
      echo "-- against the real driver: skipped, no usable GPU"
      bench_skipped=$((bench_skipped + 1))
    fi
  elif [ "$build_status" -eq 0 ]; then
    echo "gpu_check: $bench was not built"; bench_failed=$((bench_failed + 1))
  fi

  section "summary"
  echo "c++ $("$cxx" -dumpfullversion 2>/dev/null || "$cxx" -dumpversion), $("$nvcc" --version | grep -o 'release [0-9.]*'), GPUs usable: $gpus"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  fi
  echo "build: status $build_status, ${warnings:-0} warning line(s)"
  echo "benchmarks: $bench_ok ran, $bench_failed failed, $bench_skipped skipped"
  local summary_status=1 counts="tests: 0 passed, 1 failed, 0 skipped"
  if [ "$build_status" -eq 0 ]; then
    local report
    report="$(python3 "$root/tools/gpu_check.py" summary "$build" --gpus "$gpus" --may-skip 'cuda no driver')"
    summary_status=$?
    echo "$report" | sed '$d'
    counts="$(echo "$report" | tail -n 1)"
  fi
  local status=0
  if [ "$build_status" -ne 0 ] || [ "$summary_status" -ne 0 ] || [ "$bench_failed" -ne 0 ]; then status=1; fi
  [ "$test_status" -ne 0 ] && [ "$summary_status" -eq 0 ] && [ "$build_status" -eq 0 ] &&
    echo "meson test exited $test_status" && status=1
  echo "log: $log; took $(( $(date +%s) - start )) s; exit $status"
  echo "gpu_check: ${counts#tests: }"
  return $status
}

mkdir -p "$(dirname "$log")" "$work"
echo "gpu_check: writing $log"
main 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
