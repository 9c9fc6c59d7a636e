#!/usr/bin/env bash
# The local cluster demo: a node bootstrapper on this machine (swtpm as its TPM, a LUKS2 image
# file as its state disk, everything under a temp root) initialized by `constellation init` over
# attested TLS. No real kubeadm can run here, so the node installs the kubeadm CONTRACT FAKE
# (test/fixtures/kubeadm-fake/kubeadm): it writes a real PKI and admin.conf, starts no control plane.
# Everything is removed on exit. Needs ./scripts/setup.sh once.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
npm run --silent build >/dev/null

work=$(mktemp -d /tmp/constell-demo-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*" >&2; }
cli() { echo "+ constellation $*" >&2; node "$repo/bin/run.js" "$@"; }
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

step "Starting swtpm (the node's TPM)"
# tpm2-tools' swtpm TCTI expects the control port right after the server port.
tpm_port=$(free_port); ctrl_port=$((tpm_port + 1))
mkdir -p "$work/tpm"
swtpm socket --tpm2 --server "type=tcp,port=$tpm_port,bindaddr=127.0.0.1" \
  --ctrl "type=tcp,port=$ctrl_port,bindaddr=127.0.0.1" --tpmstate "dir=$work/tpm" \
  --flags not-need-init,startup-clear &
pids+=($!)
export TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$tpm_port"
for _ in $(seq 50); do tpm2_pcrread sha256:15 >/dev/null 2>&1 && break; sleep 0.1; done
tpm2_pcrread sha256:15

step "Creating the state disk: a LUKS2 image file with a random initial passphrase"
truncate -s 32M "$work/state-disk.img"
head -c 32 /dev/urandom >"$work/initial.key"; chmod 600 "$work/initial.key"
cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
  --key-file "$work/initial.key" "$work/state-disk.img"
echo "LUKS UUID: $(cryptsetup luksUUID "$work/state-disk.img")"

step "Operator workspace: constellation config generate"
init_port=$(free_port)
cli config generate qemu -C "$work/ws" --endpoint "127.0.0.1:$init_port"
# The node installs the kubeadm fake as its kubeadm component (a data: URL: no download server).
launcher=$(printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$(command -v node)" "$repo/test/fixtures/kubeadm-fake/kubeadm" | base64 -w0)
hash=$(printf '%s' "$launcher" | base64 -d | sha256sum | cut -d' ' -f1)
cat >>"$work/ws/constellation-conf.yaml" <<YAML
# demo: install the kubeadm CONTRACT FAKE instead of the real Kubernetes binaries
kubernetesComponents:
  - url: "data:application/octet-stream;base64,$launcher"
    hash: "sha256:$hash"
    installPath: /run/state/bin/kubeadm
    extract: false
YAML
# It warns about the all-zero measurements: right for real machines, and what swtpm reports here.
cli config validate -C "$work/ws"

step "Node config and constellation bootstrap run (JSON logs in $work/bootstrapper.log)"
# The node knows the init secret only as a bcrypt hash (in a cloud this is an instance tag).
init_hash=$(cli config init-secret-hash -C "$work/ws")
cat >"$work/node-config.yaml" <<YAML
attestationVariant: qemu-vtpm
tpm: { swtpm: "127.0.0.1:$tpm_port" }
root: $work/root
initServer: { listen: "127.0.0.1:$init_port" }
initSecretHash: "$init_hash"
stateDisk:
  device: $work/state-disk.img
  initialKeyFile: $work/initial.key
  pbkdf: { type: pbkdf2, iterations: 1000 }
metadata:
  provider: static
  self: { name: demo-cp-0, role: control-plane, vpcIP: 127.0.0.1 }
YAML
cat "$work/node-config.yaml" | sed 's/^/  /'
node "$repo/bin/run.js" bootstrap run --config "$work/node-config.yaml" 2>"$work/bootstrapper.log" &
bootstrapper=$!
pids+=($bootstrapper)
for _ in $(seq 100); do grep -q 'Init server listening' "$work/bootstrapper.log" 2>/dev/null && break; sleep 0.1; done

step "constellation init (aTLS: the node's TPM quote is checked against the config's measurements)"
cli init -C "$work/ws"
wait "$bootstrapper" && echo "bootstrapper finished (exit 0)"

step "The admin kubeconfig (kubeadm fake's CA; keys elided)"
sed -E 's/(-data: ).{20,}/\1<elided>/' "$work/ws/constellation-admin.conf"

step "PCR 15 now binds the node to the cluster: SHA256(0^32 || SHA256(clusterID))"
cluster_id=$(sed -n 's/^ *clusterID: //p' "$work/ws/constellation-state.yaml")
want=$( (head -c 32 /dev/zero; printf '%s' "$cluster_id" | xxd -r -p | openssl dgst -sha256 -binary) | openssl dgst -sha256 -r | cut -d' ' -f1)
got=$(tpm2_pcrread sha256:15 -o "$work/pcr15.bin" >/dev/null && xxd -p -c 64 "$work/pcr15.bin")
echo "cluster ID     $cluster_id"
echo "expected PCR15 $want"
echo "TPM PCR15      $got"
[ "$want" = "$got" ] && echo "PCR 15 matches: this node can never be initialized or join again (until reboot)"

step "constellation verify: attest the node again; PCR 15 must now carry this cluster's ID"
verify_port=$(free_port)
cat >"$work/verify-node.yaml" <<YAML
attestationVariant: qemu-vtpm
tpm: { swtpm: "127.0.0.1:$tpm_port" }
verifyService: { listen: "127.0.0.1:$verify_port" }
YAML
node "$repo/bin/run.js" verifyservice --config "$work/verify-node.yaml" 2>"$work/verifyservice.log" &
pids+=($!)
for _ in $(seq 100); do grep -q 'Verification service listening' "$work/verifyservice.log" 2>/dev/null && break; sleep 0.1; done
cli verify -C "$work/ws" --node-endpoint "127.0.0.1:$verify_port" --cluster-id "$cluster_id"

step "The state disk now opens only with HKDF(master secret, salt, \"key-<uuid>\")"
if cryptsetup open --test-passphrase --key-file "$work/initial.key" "$work/state-disk.img" 2>/dev/null; then
  echo "initial passphrase still works (unexpected)"; exit 1
fi
echo "initial passphrase: refused"
node -e "
const c=require('crypto');const fs=require('fs')
const m=JSON.parse(fs.readFileSync('$work/ws/constellation-mastersecret.json','utf8'))
const uuid='$(cryptsetup luksUUID "$work/state-disk.img")'.toLowerCase()
const key=c.hkdfSync('sha256',Buffer.from(m.key,'base64'),Buffer.from(m.salt,'base64'),'key-'+uuid,32)
fs.writeFileSync('$work/derived.key',Buffer.from(key),{mode:0o600})"
cryptsetup open --test-passphrase --key-file "$work/derived.key" "$work/state-disk.img" && echo "derived disk key: accepted"
echo
echo "Done. This demo used the kubeadm CONTRACT FAKE: no Kubernetes control plane is running."
