#!/usr/bin/env bash
# The local demo: builds the CLI and walks an operator workspace through its steps in a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent build >/dev/null
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cli() { echo "+ constellation $*" >&2; node bin/run.js "$@"; }

cli config generate qemu -C "$ws"
cli config validate -C "$ws"
