#!/usr/bin/env bash
# Install hlb into a staging prefix and check the library and the hlb command work from there.
set -euo pipefail
build=${1:-build}
prefix="$(cd "$build" && pwd)/stage"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/hlb" version
echo "install check: ok"
