#!/usr/bin/env bash
# Compiles src/ to dist/ and writes oclif's command manifest. It builds into a fresh folder and
# swaps it in, so a CLI process started from dist/ meanwhile never sees a half-written tree.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d .build-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
npx tsc -p tsconfig.json --outDir "$tmp"
old=$(mktemp -d .old-dist-XXXXXX)
[ -d dist ] && mv dist "$old/dist"
mv "$tmp" dist
rm -rf "$old"
npx oclif manifest >/dev/null
