#!/usr/bin/env bash
# Rehearses tools/gpu_check.sh on a development machine (Debian 12, root, no
# GPU) the way the lent GPU machine will run it: in a minimal Debian 12 made
# by debootstrap that has only g++, python3, meson, ninja, cmake and
# pkg-config (none of fmt, Catch2, Boost, Random123, Google Benchmark), with
# this machine's CUDA toolkit bind-mounted, and with a copy of what the device
# tool copies: the working tree's tracked and untracked-but-not-ignored files,
# plus DIR. Without a GPU the GPU-only tests SKIP; the doubles' tests run.
#
#   tools/gpu_rehearse.sh [DIR] [--without-pkg-config]
#
# --without-pkg-config hides pkg-config in the chroot, so that gpu_check.sh
# builds pkgconf from DIR as it must on a machine that lacks it.
# The chroot: $SE_GPU_REHEARSAL_ROOT (default /work/gpu-rehearsal-root), made
# once (about a minute and 300 MiB) and reused. The log is copied to
# build-gpu-rehearsal/gpu_check.log in the repository root.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/gpu-deps"
hide_pkg_config=0
for arg in "$@"; do
  case "$arg" in
    --without-pkg-config) hide_pkg_config=1 ;;
    *) dir="$(cd "$arg" && pwd)" ;;
  esac
done
chroot_dir="${SE_GPU_REHEARSAL_ROOT:-/work/gpu-rehearsal-root}"
[ "$(id -u)" = 0 ] || { echo "gpu_rehearse: needs root (debootstrap, mount, chroot)" >&2; exit 2; }
[ -f "$dir/MANIFEST" ] || { echo "gpu_rehearse: $dir/MANIFEST is missing: run tools/gpu_prepare.sh first" >&2; exit 2; }
cuda="$(readlink -f "${CUDA_PATH:-/usr/local/cuda}")"
[ -x "$cuda/bin/nvcc" ] || { echo "gpu_rehearse: no CUDA toolkit at $cuda" >&2; exit 2; }

if [ ! -x "$chroot_dir/usr/bin/meson" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  debootstrap --variant=minbase bookworm "$chroot_dir" http://deb.debian.org/debian
  chroot "$chroot_dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends g++ python3 meson ninja-build cmake pkg-config'
fi

mounts=()
hidden=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local i name
  for (( i=${#mounts[@]}-1; i>=0; i-- )); do umount "${mounts[$i]}" || true; done
  for name in "${hidden[@]}"; do mv "$chroot_dir/usr/bin/.$name.hidden" "$chroot_dir/usr/bin/$name" || true; done
}
trap cleanup EXIT
mount_into() {  # mount_into TARGET MOUNT-ARGS...
  local target="$1"; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounts+=("$target")
}
mount_into "$chroot_dir/proc" -t proc proc
mount_into "$chroot_dir/dev" --bind /dev
mount_into "$chroot_dir$cuda" --bind -o ro "$cuda"
ln -sfn "$cuda" "$chroot_dir/usr/local/cuda"
if [ "$hide_pkg_config" = 1 ]; then
  # Moved aside (and back on exit): a file mounted over it would still be found.
  for name in pkg-config pkgconf x86_64-linux-gnu-pkg-config x86_64-linux-gnu-pkgconf; do
    if [ -e "$chroot_dir/usr/bin/$name" ] || [ -L "$chroot_dir/usr/bin/$name" ]; then
      mv "$chroot_dir/usr/bin/$name" "$chroot_dir/usr/bin/.$name.hidden"
      hidden+=("$name")
    fi
  done
fi

# What the device tool copies: tracked files and untracked files git does not
# ignore, then the carried DIR.
rm -rf "$chroot_dir/work" "$chroot_dir/out"
mkdir -p "$chroot_dir/work/repo" "$chroot_dir/out"
(cd "$root" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$chroot_dir/work/repo"
cp -r "$dir" "$chroot_dir/work/repo/gpu-deps"

start=$(date +%s)
status=0
chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root OUT=/out bash -c 'cd /work/repo && tools/gpu_check.sh gpu-deps' > /dev/null || status=$?
mkdir -p "$root/build-gpu-rehearsal"
cp "$chroot_dir/out/gpu_check.log" "$root/build-gpu-rehearsal/gpu_check.log"
echo "gpu_rehearse: gpu_check.sh exited $status after $(( $(date +%s) - start )) s; log: $root/build-gpu-rehearsal/gpu_check.log"
tail -n 1 "$root/build-gpu-rehearsal/gpu_check.log"
exit "$status"
