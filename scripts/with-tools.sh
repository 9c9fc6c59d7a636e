#!/usr/bin/env bash
# Runs the built CLI with this checkout's tools first on PATH: .tools/helm is the real helm 4 that
# scripts/setup.sh takes from an npm package when no helm is installed (`mini` installs the
# cluster's Helm releases with it). `npm run mini` and `npm run -s constellation -- …` use this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PATH="$root/.tools:$PATH" exec node "$root/bin/run.js" "$@"
