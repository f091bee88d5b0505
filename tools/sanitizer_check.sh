#!/usr/bin/env bash
# Runs the generic suite and the lifetime tests under ASan+UBSan and under
# TSan, each in a build directory of its own (build-asan, build-tsan). CI runs
# it after the main suite; `tools/sanitizer_check.sh thread` runs one kind.
#
# The builds are kept light so that CI stays under its time limit: -O0 with
# line tables only, only the backends that run on this machine (a GPU-only
# backend would compile its suite here only to skip it), no canned family or
# example, and only the executables those two suites run. Any report fails the
# test: Meson sets halt_on_error for ASan and UBSan, TSan exits 66 on a race.
set -euo pipefail
cd "$(dirname "$0")/.."

kinds=("$@")
[[ ${#kinds[@]} -gt 0 ]] || kinds=(address thread)

status=0
for kind in "${kinds[@]}"; do
  case $kind in
    address) dir=build-asan sanitize=address,undefined ;;
    thread) dir=build-tsan sanitize=thread ;;
    *)
      echo "sanitizers: unknown kind '$kind' (address or thread)" >&2
      exit 2
      ;;
  esac
  start=$(date +%s)
  if [[ ! -d $dir ]]; then
    # cuda: its generic cases need a GPU, and its lifetime case without a
    # driver is the same early return on every sanitizer; it runs unsanitized
    # in the main suite.
    meson setup "$dir" -Db_sanitize="$sanitize" -Db_lundef=false -Dbuildtype=plain \
      -Dcpp_args="-O0 -g1 -fno-omit-frame-pointer" -Dcuda=disabled -Dexamples=disabled \
      -Drandom123=disabled -Dfft=disabled -Ddnn=disabled -Dblas=disabled >/dev/null
  fi
  # The lifetime tests and the generic suite (its separately compiled runs are
  # the same cases), as test names and as the executables' Ninja targets.
  selection=$(meson introspect "$dir" --tests | python3 -c '
import json, os, sys
directory = os.path.realpath(sys.argv[1])
tests = [test for test in json.load(sys.stdin)
         if "streamexecutor:lifetime" in test["suite"]
         or ("streamexecutor:generic" in test["suite"] and "streamexecutor:separate" not in test["suite"])]
for test in tests:
    print("test", test["name"], sep="\t")
for path in sorted({os.path.relpath(test["cmd"][0], directory) for test in tests}):
    print("target", path, sep="\t")' "$dir")
  mapfile -t names < <(awk -F'\t' '$1 == "test" { print $2 }' <<<"$selection")
  mapfile -t targets < <(awk -F'\t' '$1 == "target" { print $2 }' <<<"$selection")
  ninja -C "$dir" "${targets[@]}" >/dev/null
  # Meson's own ASan defaults, plus intercept_tls_get_addr=0: up to GCC 13 the
  # runtime's __tls_get_addr interceptor takes a heap block that happens to sit
  # at a certain page offset for a pre-2.25 glibc TLS header, and the leak
  # checker's tracer then dies at exit ("Tracer caught signal 11") after every
  # case passed. PoCL's threads use dynamic TLS; the OpenCL suite met it
  # once (CI of ee280b9).
  export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_summary=1:intercept_tls_get_addr=0
  if meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 "${names[@]}" \
    >"$dir/sanitizer-test.log" 2>&1; then
    result=passed
  else
    result=FAILED
    status=1
    cat "$dir/sanitizer-test.log"
  fi
  summary=$(grep -E '^(Ok|Fail|Skipped):' "$dir/sanitizer-test.log" | tr -s ' ' | paste -sd' ' -)
  echo "sanitizers: $sanitize $result ($summary) in $(($(date +%s) - start)) s"
done
exit $status
