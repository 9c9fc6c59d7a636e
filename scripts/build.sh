#!/usr/bin/env bash
# Bundles src/ into dist/ (scripts/bundle.ts), writes oclif's command manifest and the help index.
# It builds into a fresh folder and swaps it in, so a CLI process started from dist/ meanwhile
# never sees a half-written tree. Type checking is `npm run typecheck`.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d .build-XXXXXX)
chmod 755 "$tmp" # mktemp makes it 0700: dist/ must be readable by whoever runs the CLI
trap 'rm -rf "$tmp"' EXIT
npx tsx scripts/bundle.ts "$tmp"
old=$(mktemp -d .old-dist-XXXXXX)
[ -d dist ] && mv dist "$old/dist"
mv "$tmp" dist
rm -rf "$old"
# V8's code cache for the CommonJS bundles (bin/code-cache.js), made where they run: the cache
# keeps the path it was made at, which every stack trace of the bundle then names.
for bundle in dist/*.cjs; do node bin/code-cache.js --write "$bundle"; done
# oclif (the dev tool) checks npm for a newer version of itself and warns on stderr: not our news.
OCLIF_SKIP_NEW_VERSION_CHECK=true npx oclif manifest >/dev/null
# Every help page, rendered by oclif from that manifest, for bin/run.js to print without oclif.
npx tsx scripts/gen-help-index.ts dist
