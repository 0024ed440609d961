#!/usr/bin/env bash
# make demo: the main job on this machine's own devices.
set -euo pipefail
build=${1:-build}
exec "$build/tools/hlb/hlb" version
