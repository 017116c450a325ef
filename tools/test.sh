#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install, configure, build, test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake --workflow --preset release
ctest --preset release -j "$(nproc)"
