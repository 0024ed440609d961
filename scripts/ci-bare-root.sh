#!/usr/bin/env bash
# Run a command (default: the README's `make test`) on a fresh clone of this repository's
# committed HEAD inside a bare Debian 12 root that has only git, make and ca-certificates.
# Whatever the project does not install itself (scripts/install-deps.sh) is missing there, so
# a forgotten install step fails here instead of on a user's new machine.
#
#   scripts/ci-bare-root.sh              # make test, as .ci/run does
#   scripts/ci-bare-root.sh make demo
#
# Environment:
#   HLB_CI_CACHE     where the root tarball is kept between runs
#                    (default ${XDG_CACHE_HOME:-$HOME/.cache}/hlb-ci); delete it to rebuild
#   HLB_CI_NO_CUDA=1 do not mount the host's /usr/local/cuda inside
#
# The host's CUDA toolkit (/usr/local/cuda, not a Debian package) is mounted read-only inside
# when present, so the CUDA backend keeps being compiled. Needs root (mmdebstrap, chroot and
# bind mounts). When the root cannot be made or entered (no package registry, no privileges),
# the script says so loudly and runs the command on the host instead: CI still tests the code,
# but that run no longer proves the set-up. Exit status: the command's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cmd=("$@")
[ ${#cmd[@]} -gt 0 ] || cmd=(make test)
cache=${HLB_CI_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/hlb-ci}
tarball=$cache/debian12-bare.tar
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$cache"

root=""
mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  mounts=()
  # --one-file-system: never follow a mount that failed to come off into the host.
  [ -z "$root" ] || rm -rf --one-file-system "$root"
  root=""
}
trap cleanup EXIT

run_on_host() {
  cleanup
  printf '\n%s\n' "################################################################"
  printf '%s\n' "ci-bare-root: $1"
  printf '%s\n' "ci-bare-root: RUNNING '${cmd[*]}' ON THE HOST INSTEAD."
  printf '%s\n' "ci-bare-root: this run does NOT prove that a fresh machine can build and test hlb."
  printf '%s\n\n' "################################################################"
  cd "$repo"
  exec "${cmd[@]}" </dev/null
}

[ "$(id -u)" -eq 0 ] || run_on_host "not root: cannot make a Debian root"

if ! command -v mmdebstrap >/dev/null; then
  echo "ci-bare-root: installing mmdebstrap"
  { apt-get update -q && apt-get install -y -q --no-install-recommends mmdebstrap; } </dev/null \
    >"$cache.apt.log" 2>&1 || true
  command -v mmdebstrap >/dev/null || run_on_host "mmdebstrap could not be installed (no package registry?)"
fi

# The bare root: Debian 12 (bookworm), variant apt, plus git, make and ca-certificates. It is
# made from the host's own apt sources, so it uses the mirror this machine can reach.
make_tarball() {
  mkdir -p "$cache"
  local sources
  sources=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1 || true)
  [ -n "$sources" ] || sources=/etc/apt/sources.list
  echo "ci-bare-root: making a bare Debian 12 root (cached in $tarball)"
  mmdebstrap --quiet --mode=root --format=tar --variant=apt --include=git,make,ca-certificates \
    bookworm "$tarball.part" "$sources" </dev/null && mv "$tarball.part" "$tarball"
}
if [ ! -s "$tarball" ]; then
  make_tarball || { rm -f "$tarball.part"; run_on_host "the bare root could not be made (mmdebstrap failed; is a package registry reachable?)"; }
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/hlb-bare-root.XXXXXX")

bind() { # bind SRC DEST [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2" || return 1
  mounts+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2" || return 1; fi
}

tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp -r /etc/apt/apt.conf.d/. "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
git clone -q "$repo" "$root/src/hlb"
for m in proc sys dev dev/pts dev/shm; do
  bind "/$m" "$root/$m" || run_on_host "cannot bind-mount /$m into the root (not enough privileges)"
done

if [ -d /usr/local/cuda ] && [ -z "${HLB_CI_NO_CUDA:-}" ]; then
  cuda=$(readlink -f /usr/local/cuda)
  bind "$cuda" "$root$cuda" ro || run_on_host "cannot mount $cuda read-only into the root"
  [ "$cuda" = /usr/local/cuda ] || ln -sfn "$cuda" "$root/usr/local/cuda"
  # As on the host, the loader must know where the CUDA runtime is.
  echo "$cuda/lib64" >"$root/etc/ld.so.conf.d/hlb-ci-cuda.conf"
  chroot "$root" ldconfig
fi

echo "ci-bare-root: running '${cmd[*]}' in a bare Debian 12 root on a clone of $(git -C "$repo" rev-parse --short HEAD)"
set +e
chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 CI="${CI:-true}" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c 'cd /src/hlb && "$@"' bash "${cmd[@]}" </dev/null
status=$?
set -e
echo "ci-bare-root: '${cmd[*]}' exited with $status"
exit $status
