#!/usr/bin/env bash
# Checks the C++ sources against .clang-format; with --fix, formats them.
# Uses the clang-format the style was fixed with (PyPI's clang-format wheel,
# installed once into a virtual environment under the user's cache), so
# that every machine formats alike. tests/compile_fail/ is left as written:
# its sources carry the expected compiler message on one long comment line.
set -euo pipefail
cd "$(dirname "$0")/.."

version=18.1.8
venv=${STREAMEXECUTOR_CLANG_FORMAT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/streamexecutor/clang-format-$version}
if [[ ! -x $venv/bin/clang-format ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "clang-format==$version"
fi

mapfile -t files < <(git ls-files '*.hpp' '*.cpp' '*.cu' '*.h' ':!:tests/compile_fail/*')
if [[ ${1:-} == --fix ]]; then
  "$venv/bin/clang-format" -i "${files[@]}"
  exit 0
fi
if ! "$venv/bin/clang-format" --dry-run --Werror "${files[@]}"; then
  echo "format: the files above differ from .clang-format; tools/check_format.sh --fix formats them" >&2
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format (clang-format $version)"
