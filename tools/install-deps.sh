#!/usr/bin/env bash
# Installs the Debian 12 packages trainwatch builds against (idempotent; quick when present).
#   tools/install-deps.sh          what the release, debug and asan presets need
#   tools/install-deps.sh --fuzz   and clang 16 with its libFuzzer/sanitizer runtimes, for the
#                                  fuzz preset (Debian 12's default clang 14 cannot compile
#                                  src/diagnose/engine.cc: C++20 lambdas capturing structured
#                                  bindings)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config protobuf-compiler libprotobuf-dev zlib1g-dev
      libsqlite3-dev sqlite3 libboost1.81-dev libboost-json1.81-dev libgtest-dev libgmock-dev
      libbenchmark-dev libssl-dev libcurl4-openssl-dev libtomlplusplus-dev systemd procps
      python3-aiosmtpd  # the SMTP server the email tests talk to (/usr/bin/python3)
      nodejs  # runs the vendored S3 server the object-store tests talk to (third_party/s3rver)
      postgresql-15 libpq-dev  # the fleet store (src/fleet); its tests start a server of their own
      chromium fonts-dejavu-core)  # the web view's browser tests, screenshots and benchmark
                                   # (headless, over the DevTools protocol: tests/support/browser.h)
for arg in "$@"; do
  case "$arg" in
    --fuzz) pkgs+=(clang-16 libclang-rt-16-dev) ;;
    *) echo "usage: $0 [--fuzz]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
