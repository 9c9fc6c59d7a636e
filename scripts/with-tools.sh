#!/usr/bin/env bash
# Runs the built CLI with this checkout's tools first on PATH: .tools/helm is the real helm 4 that
# scripts/setup.sh takes from an npm package when no helm is installed (`mini` installs the
# cluster's Helm releases with it). scripts/link-cli.sh links it as `constellation` into a folder on
# PATH; `npm run mini` and `npm run -s constellation -- …` use it too, with --from-npm first.
set -euo pipefail
# through the link: the checkout is where the script really is
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# `npm run` starts its scripts in the checkout, but the paths the user typed (-C ws, -f x.yaml) mean
# the folder they typed them in, which npm passes as INIT_CWD. Only then: a plain call keeps its own
# folder even when an npm script of some other project (with an INIT_CWD of its own) runs it.
if [ "${1:-}" = --from-npm ]; then
  shift
  cd "${INIT_CWD:-.}"
fi
PATH="$root/.tools:$PATH" exec node "$root/bin/run.js" "$@"
