#!/usr/bin/env bash
# Replaces the vendored uPlot (third_party/uplot) with another version from the npm registry.
#   tools/update-uplot.sh VERSION
# Needs npm (a developer's machine; never run by the build or the tests).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 VERSION" >&2; exit 2; }
version="$1"
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null)
tgz="$tmp/uplot-$version.tgz"
tar -xzf "$tgz" -C "$tmp"
grep -q '"license": "MIT"' "$tmp/package/package.json" || { echo "uplot $version is not MIT-licensed" >&2; exit 1; }
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$repo/third_party/uplot/"
cp "$tmp/package/LICENSE" "$repo/third_party/uplot/uPlot.LICENSE"
echo "uplot $version: tarball sha256 $(sha256sum "$tgz" | cut -d' ' -f1)"
echo "now update the table in third_party/uplot/README.md"
