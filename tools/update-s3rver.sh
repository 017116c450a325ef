#!/usr/bin/env bash
# Replaces the vendored s3rver (third_party/s3rver: the S3-compatible server the object-store
# tests start on loopback) with another version from the npm registry, pruned of what it does
# not run (docs, tests, type declarations, lodash's per-method copies).
#   tools/update-s3rver.sh VERSION
# Needs npm (a developer's machine; never run by the build or the tests).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 VERSION" >&2; exit 2; }
version="$1"
repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="$repo/third_party/s3rver"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm init -y >/dev/null && npm install --no-audit --no-fund --omit=dev --save-exact "s3rver@$version" >/dev/null)
nm="$tmp/node_modules"
# Licenses first: every package must be under a licence that allows vendoring.
node -e '
  const fs = require("fs"), path = require("path");
  const ok = new Set(["MIT", "ISC", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "0BSD", "BlueOak-1.0.0"]);
  const dir = process.argv[1];
  const rows = [];
  const walk = d => { for (const n of fs.readdirSync(d)) {
    const p = path.join(d, n);
    if (n.startsWith("@")) { walk(p); continue; }
    const pj = path.join(p, "package.json");
    if (!fs.existsSync(pj)) continue;
    const j = JSON.parse(fs.readFileSync(pj));
    // Old packages say it as "licenses": [{"type": "MIT", ...}].
    let lic = typeof j.license === "string" ? j.license
              : Array.isArray(j.licenses) && j.licenses.length === 1 ? j.licenses[0].type
              : JSON.stringify(j.license || j.licenses);
    // Packages whose package.json names no licence, checked by hand (the licence their
    // Readme states): a new version of one is checked again before it is added here.
    const byHand = {"humanize-number@0.0.2": "MIT", "only@0.0.2": "MIT"};
    if (lic === undefined || lic === "undefined") lic = byHand[`${j.name}@${j.version}`];
    if (!ok.has(lic)) { console.error(`${j.name}: licence ${lic} not in the allowed list`); process.exit(1); }
    rows.push(`| ${j.name} | ${j.version} | ${lic} |`);
  } };
  walk(dir);
  fs.writeFileSync(path.join(dir, "..", "licenses.md"), rows.sort().join("\n") + "\n");
' "$nm"
# Prune: lodash is required whole (lodash.js); everything else keeps its code.
find "$nm/lodash" -mindepth 1 -maxdepth 1 ! -name lodash.js ! -name package.json ! -name LICENSE ! -name index.js -exec rm -rf {} +
find "$nm" \( -name '*.md' -o -name '*.markdown' -o -name '*.ts' -o -name '*.map' -o -name '.github' \
  -o -name 'test' -o -name 'tests' -o -name 'docs' -o -name 'example' -o -name 'examples' \
  -o -name '.travis.yml' -o -name '.eslintrc*' -o -name '.npmignore' -o -name 'CHANGELOG*' \) -prune -exec rm -rf {} +
rm -rf "$dest/node_modules"
mkdir -p "$dest"
cp -r "$nm" "$dest/node_modules"
cp "$tmp/package.json" "$tmp/package-lock.json" "$dest/"
# Ours: s3rver takes V4 signatures on trust; the patch verifies header-signed ones, so that a
# wrong secret is refused as S3 refuses it (SignatureDoesNotMatch).
patch -p1 -d "$dest/node_modules/s3rver" < "$dest/verify-v4-signatures.patch"
{
  echo "| package | version | licence |"
  echo "|---|---|---|"
  cat "$tmp/licenses.md"
} > "$dest/licenses.md"
echo "s3rver $version: $(du -sh "$dest/node_modules" | cut -f1) in node_modules; licences in third_party/s3rver/licenses.md"
echo "now update the version in third_party/s3rver/README.md"
