#!/usr/bin/env bash
# Gathers, on a Debian 12 development machine, the sources of everything the
# CUDA backend's tests, examples and benchmarks need besides the CUDA toolkit,
# into one folder that travels to a bare GPU machine (no package manager, no
# network) where tools/gpu_check.sh builds them with that machine's compiler.
#
#   tools/gpu_prepare.sh [DIR]        (default: gpu-deps, in the repository root)
#
# What DIR holds (docs/cuda.md, "The day a GPU is lent"): Debian's upstream
# source tarballs of fmt, Catch2, Google Benchmark, Random123 and pkgconf,
# unpacked, and the part of Boost 1.74 that Boost.Context needs (its headers'
# include closure and libboost_context's sources). Sources rather than
# Debian's built libraries: those are linked against Debian's glibc and
# libstdc++, which the GPU machine may not have. Every tarball is Debian's,
# checked against the signed Sources index by apt and by sha256 here; DIR/MANIFEST
# lists them. apt runs with a private state folder (deb-src lines of its own),
# so the machine's apt configuration is left as it is.
#
# Cache of the downloads: $SE_GPU_PREPARE_CACHE (default ~/.cache/streamexecutor-gpu-prepare).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/gpu-deps}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
cache="${SE_GPU_PREPARE_CACHE:-${HOME:-/root}/.cache/streamexecutor-gpu-prepare}"
# Source packages, each with the one upstream tarball taken from it.
packages=(fmtlib catch2 benchmark librandom123 pkgconf boost1.74)
# Over this DIR would not fit beside the working tree in the device tool's 64 MiB.
max_kib=$((40 * 1024))

die() { echo "gpu_prepare: error: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is missing here ($2)"; }
need apt-get "a Debian machine is needed to fetch the sources"
need tar "apt-get install tar"
need xz "apt-get install xz-utils"
need sha256sum "apt-get install coreutils"
need g++ "apt-get install g++: it computes Boost.Context's header closure"

mkdir -p "$cache"/apt/{lists/partial,archives/partial,parts} "$cache/downloads"
cat > "$cache/apt/parts/debian-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$cache/apt/parts"
  -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt" -o Debug::NoLocking=1
  -o APT::Sandbox::User=root)

echo "gpu_prepare: updating the deb-src index (private to $cache/apt)"
apt-get "${apt_opts[@]}" -qq update

# The upstream tarball of a source package: "URI NAME SIZE SHA256:HASH".
orig_of() {
  local listing empty
  # In an empty folder, so that no file is "already downloaded" and unlisted.
  empty="$(mktemp -d)"
  listing="$(cd "$empty" && apt-get "${apt_opts[@]}" -qq source --print-uris "$1" 2>/dev/null)" ||
    { rmdir "$empty"; die "apt-get source --print-uris $1 failed"; }
  rmdir "$empty"
  grep -E "\.orig\.tar\.(gz|xz|bz2)' " <<<"$listing" | head -n 1 | tr -d "'"
}

declare -A tarball
scratch="$(mktemp -d)"
# On success $dir.new has become $dir; on failure nothing half made is left.
trap 'rm -rf "$scratch" "$dir.new"' EXIT
rm -rf "$dir.new"
mkdir -p "$dir.new/src"
{
  echo "# Sources for tools/gpu_check.sh, made by tools/gpu_prepare.sh on $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# on $(. /etc/os-release && echo "$PRETTY_NAME"). package version tarball sha256"
} > "$dir.new/MANIFEST"
for package in "${packages[@]}"; do
  read -r uri name size hash <<<"$(orig_of "$package")"
  [ -n "${name:-}" ] || die "no upstream tarball listed for source package $package"
  hash="${hash#SHA256:}"
  file="$cache/downloads/$name"
  if [ ! -f "$file" ] || [ "$(sha256sum "$file" | cut -d' ' -f1)" != "$hash" ]; then
    echo "gpu_prepare: downloading $name ($((size / 1024)) KiB)"
    # apt-get source also fetches the .dsc and Debian's patches; only the
    # upstream tarball is used, and a missing patch tarball on the mirror is
    # no reason to stop, so its status is judged by the tarball's hash below.
    (cd "$cache/downloads" && apt-get "${apt_opts[@]}" -qq source --download-only "$package" >/dev/null 2>&1) || true
    [ -f "$file" ] || die "apt-get source --download-only $package did not bring $name ($uri)"
  fi
  [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$hash" ] || die "$name: sha256 differs from Debian's Sources index"
  version="$(sed -E 's/^[^_]+_([^_]+)\.orig\.tar\..*/\1/' <<<"$name")"
  echo "$package $version $name $hash" >> "$dir.new/MANIFEST"
  tarball[$package]="$file"
done

# Unpacked whole, as upstream ships them: the GPU machine needs no xz.
for package in fmtlib catch2 benchmark librandom123 pkgconf; do
  tar -xf "${tarball[$package]}" -C "$dir.new/src"
done

# Boost: its tarball is 60 MiB, so only what Boost.Context needs travels: the
# headers that <boost/context/fiber.hpp> and libboost_context's sources
# include (as g++, clang++ and nvcc preprocess them), all of Boost.Config
# (which picks other headers for another compiler or standard library) and
# of Boost.Context, and the sources of libboost_context with fcontext (the
# x86_64 System V assembly and posix/stack_traits.cpp, as Boost's Jamfile
# builds it on Linux).
boost_version="$(grep '^boost1.74 ' "$dir.new/MANIFEST" | cut -d' ' -f2)"
boost_out="$dir.new/src/boost-context-${boost_version%%+*}"
echo "gpu_prepare: extracting Boost.Context's closure from ${tarball[boost1.74]##*/}"
tar -xJf "${tarball[boost1.74]}" -C "$scratch" --wildcards 'boost/libs/*/include/*' \
  'boost/libs/context/src/*' 'boost/LICENSE_1_0.txt'
includes=()
for inc in "$scratch"/boost/libs/*/include "$scratch"/boost/libs/*/*/include; do
  [ -d "$inc/boost" ] && includes+=("-I$inc")
done
printf '#include <boost/version.hpp>\n#include <boost/context/fiber.hpp>\nint main() {}\n' > "$scratch/probe.cpp"
cp "$scratch/probe.cpp" "$scratch/probe.cu"
context_src="$scratch/boost/libs/context/src"
{
  g++ -std=c++20 -M "${includes[@]}" "$scratch/probe.cpp"
  g++ -std=c++20 -M "${includes[@]}" "$context_src/posix/stack_traits.cpp"
  if command -v clang++ >/dev/null; then clang++ -std=c++20 -M "${includes[@]}" "$scratch/probe.cpp"; fi
  if command -v nvcc >/dev/null; then nvcc -std=c++20 -M "${includes[@]}" "$scratch/probe.cu"; fi
} | tr ' \\' '\n\n' | grep -E "^$scratch/boost/libs/.*/include/boost/" | sort -u > "$scratch/closure"
[ -s "$scratch/closure" ] || die "Boost.Context's header closure came out empty"
mkdir -p "$boost_out/include" "$boost_out/src/asm" "$boost_out/src/posix"
copy_header() {  # .../libs/X/include/boost/Y -> $boost_out/include/boost/Y
  local relative="boost/${1#*/include/boost/}"
  mkdir -p "$boost_out/include/$(dirname "$relative")"
  cp "$1" "$boost_out/include/$relative"
}
while read -r header; do copy_header "$header"; done < "$scratch/closure"
find "$scratch/boost/libs/config/include/boost" "$scratch/boost/libs/context/include/boost" -type f |
  while read -r header; do copy_header "$header"; done
cp "$context_src"/asm/{make,jump,ontop}_x86_64_sysv_elf_gas.S "$boost_out/src/asm/"
cp "$context_src/posix/stack_traits.cpp" "$boost_out/src/posix/"
cp "$scratch/boost/LICENSE_1_0.txt" "$boost_out/"
# The closure is complete only if the trimmed tree alone satisfies it: every
# Boost header the probe reaches must come from it, none from the system.
if g++ -std=c++20 -M -I"$boost_out/include" "$scratch/probe.cpp" "$boost_out/src/posix/stack_traits.cpp" |
    tr ' \\' '\n\n' | grep '/boost/' | grep -v "^$boost_out/include/"; then
  die "the trimmed Boost tree misses the headers above"
fi

cat > "$dir.new/README" <<EOF
Sources for tools/gpu_check.sh (docs/cuda.md, "The day a GPU is lent"), made by
tools/gpu_prepare.sh from Debian 12's source packages: see MANIFEST. Carry this
folder with the working tree to the GPU machine, then run tools/gpu_check.sh $(basename "$dir").
Each project keeps its own licence file in its folder under src/.
EOF

kib="$(du -sk "$dir.new" | cut -f1)"
[ "$kib" -le "$max_kib" ] || die "$dir.new is $kib KiB, over the $max_kib KiB that leave room for the working tree"
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "gpu_prepare: $dir is ready ($((kib / 1024)) MiB, $(find "$dir" -type f | wc -l) files):"
sed -n '3,$p' "$dir/MANIFEST" | sed 's/^/  /'
