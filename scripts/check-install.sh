#!/usr/bin/env bash
# Install hlb into a staging prefix and prove another project can use it from there:
# the hlb command runs, and examples/user_kernel builds and runs both through pkg-config
# (its Makefile) and through find_package(hlb) (its CMakeLists.txt).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
prefix="$build/stage"
work="$build/check-install"
rm -rf "$prefix" "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/hlb" version

# The library's own directory on the loader path is what an installed system would have.
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pkgdir=$(dirname "$(find "$prefix" -name hlb.pc | head -1)")

echo "== pkg-config build"
cp "$root/examples/user_kernel/user_kernel.c" "$root/examples/user_kernel/Makefile" "$work/"
PKG_CONFIG_PATH="$pkgdir" make -s -C "$work" user_kernel
"$work/user_kernel" 200000 cpu

echo "== find_package(hlb) build"
cmake -S "$root/examples/user_kernel" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/user_kernel" 200000 cpu

echo "install check: ok"
