#!/usr/bin/env bash
# Install hlb into a staging prefix and prove another project can use it from there:
# the hlb command runs; examples/user_kernel builds and runs through pkg-config (its
# Makefile), statically against libhlb.a (`pkg-config --static`), and through
# find_package(hlb); examples/mpi builds through pkg-config hlb_mpi and through
# find_package(hlb) + hlb::hlb_mpi, and each build runs on 2 ranks; examples/starpu builds
# through pkg-config hlb_starpu and through find_package(hlb) + hlb::hlb_starpu.
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

echo "== static build (libhlb.a, pkg-config --static)"
PKG_CONFIG_PATH="$pkgdir" make -s -C "$work" user_kernel_static
# Nothing of hlb may be resolved from the shared library.
if ldd "$work/user_kernel_static" | grep -q 'libhlb\.so'; then
  echo "install check: user_kernel_static is linked against libhlb.so" >&2
  exit 1
fi
"$work/user_kernel_static" 200000 cpu

if [ -f "$pkgdir/hlb_mpi.pc" ]; then
  mpirun=(mpirun --oversubscribe --allow-run-as-root -np 2)
  spmd_run() { # a small Jacobi on 2 ranks must converge to its checksum and exit 0
    "${mpirun[@]}" "$1" --rows 200 --iters 50 --interval 10 >"$work/jacobi.out"
    grep -q checksum "$work/jacobi.out" || { cat "$work/jacobi.out"; exit 1; }
  }
  echo "== MPI program, pkg-config hlb_mpi"
  mkdir -p "$work/mpi"
  cp "$root"/examples/mpi/*.c "$root"/examples/mpi/*.h "$root/examples/mpi/Makefile" "$work/mpi/"
  PKG_CONFIG_PATH="$pkgdir" make -s -C "$work/mpi" hlb_jacobi
  spmd_run "$work/mpi/hlb_jacobi"
  echo "== MPI program, find_package(hlb) and hlb::hlb_mpi"
  cmake -S "$root/examples/mpi" -B "$work/mpi-cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$work/mpi-cmake" >/dev/null
  spmd_run "$work/mpi-cmake/hlb_jacobi"
else
  echo "install check: hlb_mpi.pc not installed (built without MPI): MPI builds not checked"
fi

if [ -f "$pkgdir/hlb_starpu.pc" ]; then
  starpu_env=(env STARPU_NCPU=2 STARPU_NOPENCL=0 STARPU_SILENT=1 STARPU_HOME="$work/starpu_home")
  echo "== StarPU program, pkg-config hlb_starpu"
  mkdir -p "$work/starpu"
  cp "$root/examples/starpu/scale.c" "$root/examples/starpu/Makefile" "$work/starpu/"
  PKG_CONFIG_PATH="$pkgdir" make -s -C "$work/starpu" hlb_starpu_scale
  "${starpu_env[@]}" "$work/starpu/hlb_starpu_scale" 200000 hlb
  echo "== StarPU program, find_package(hlb) and hlb::hlb_starpu"
  cmake -S "$root/examples/starpu" -B "$work/starpu-cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$work/starpu-cmake" >/dev/null
  "${starpu_env[@]}" "$work/starpu-cmake/hlb_starpu_scale" 200000 greedy
else
  echo "install check: hlb_starpu.pc not installed (built without StarPU): StarPU builds not checked"
fi

echo "install check: ok"
