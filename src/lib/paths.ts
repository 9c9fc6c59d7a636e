/** Every file name and node path the tool uses, in one place; node paths hang off a root. */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const WORKSPACE_FILES = {
  config: 'constellation-conf.yaml',
  state: 'constellation-state.yaml',
  masterSecret: 'constellation-mastersecret.json',
  adminConf: 'constellation-admin.conf',
  clusterLog: 'constellation-cluster.log',
  debugLog: 'constellation-debug.log',
  upgradeDir: 'constellation-upgrade',
} as const

export function workspacePaths(dir: string) {
  const at = (name: string) => path.resolve(dir, name)
  return {
    dir: path.resolve(dir),
    config: at(WORKSPACE_FILES.config),
    state: at(WORKSPACE_FILES.state),
    masterSecret: at(WORKSPACE_FILES.masterSecret),
    adminConf: at(WORKSPACE_FILES.adminConf),
    clusterLog: at(WORKSPACE_FILES.clusterLog),
    debugLog: at(WORKSPACE_FILES.debugLog),
    upgradeDir: at(WORKSPACE_FILES.upgradeDir),
  } as const
}
export type WorkspacePaths = ReturnType<typeof workspacePaths>

/** Node directories (relative to the root) kept on the state disk; see nodePaths().stateDiskDirs. */
export const STATE_DISK_DIRS = [
  'etc/kubernetes',
  'var/config',
  'var/lib/kubelet',
  'var/lib/etcd',
  'var/log/kubernetes',
  'opt/cni/bin',
  'opt/kubernetes',
] as const

/** Paths on a node. Tests pass a temp dir as root; production uses `/`. */
export function nodePaths(root = '/') {
  const at = (...p: string[]) => path.join(root, ...p)
  return {
    root,
    stateDir: at('run/state'),
    binDir: at('run/state/bin'),
    kubeadm: at('run/state/bin/kubeadm'),
    kubelet: at('run/state/bin/kubelet'),
    kubectl: at('run/state/bin/kubectl'),
    cniBinDir: at('opt/cni/bin'),
    kubeadmPatchDir: at('opt/kubernetes/patches'),
    kubernetesDir: at('etc/kubernetes'),
    kubernetesPki: at('etc/kubernetes/pki'),
    adminConf: at('etc/kubernetes/admin.conf'),
    /** The kubelet's kubeconfig, which kubeadm writes on every node (a worker's only one). */
    kubeletConf: at('etc/kubernetes/kubelet.conf'),
    serviceConfigDir: at('var/config'),
    /** The master secret and its salt as the node persists them for the key service (raw bytes, 0600). */
    masterSecretFile: at('var/config/mastersecret'),
    masterSaltFile: at('var/config/salt'),
    measurementSecretFile: at('var/config/measurementSecret'),
    measurementSaltFile: at('var/config/measurementSalt'),
    /** The measurements the join service enforces (attestation/join-config.ts has the format). */
    joinConfigFile: at('var/config/join-config.json'),
    /** The Kubernetes components the cluster runs (JSON), which the join service hands to joining nodes. */
    componentsFile: at('var/config/components.json'),
    /** Role, measurement salt and disk UUID (Constellation's node_state.json, on the state disk). */
    nodeStateFile: at('run/state/constellation/node_state.json'),
    /** The answer of an Init whose caller was gone, kept (0600, on the state disk) until a resume fetched it. */
    initResultFile: at('run/state/constellation/init-result.json'),
    /** Written once state-disk setup is done in this boot (memory-backed, gone at the next). */
    stateDiskReadyFile: at('run/constellation/state-disk-ready'),
    /** The random key a fresh state disk is formatted with; memory-backed, gone at the next boot. */
    stateDiskInitialKeyFile: at('run/cryptsetup-keys.d/state.key'),
    /**
     * What lives on the state disk besides stateDir itself: bound from stateDir/persistent/<dir>
     * at boot, so that the cluster's keys, PKI and data survive a reboot encrypted, and a reformat
     * starts them empty.
     */
    stateDiskDirs: STATE_DISK_DIRS,
    manifestsDir: at('etc/kubernetes/manifests'),
    auditPolicy: at('etc/kubernetes/audit-policy.yaml'),
    auditLogDir: at('var/log/kubernetes/audit'),
    kubeletPki: at('run/state/kubelet/pki'),
    kubeletClientCert: at('run/state/kubelet/pki/kubelet-client-crt.pem'),
    kubeletClientKey: at('run/state/kubelet/pki/kubelet-client-key.pem'),
    /** TCG event log of the boot, attached to vTPM attestations when present (securityfs). */
    tpmEventLog: at('sys/kernel/security/tpm0/binary_bios_measurements'),
    /** The kernel's configfs-tsm reports: a confidential VM's SEV-SNP report or TDX quote. */
    tsmReport: at('sys/kernel/config/tsm/report'),
    /** 0700 scratch space for key files handed to child processes (tmpfs on a node). */
    runtimeDir: at('run/constellation'),
    /** Components between download and install (on the state disk, beside where they go). */
    componentStagingDir: at('run/state/constellation/staging'),
    /** Resolves a component install path (absolute on the node) under the root. */
    under: (nodeAbsolutePath: string) => at(nodeAbsolutePath),
  } as const
}
export type NodePaths = ReturnType<typeof nodePaths>

/**
 * The `control_plane_files` of a join ticket that are not kubeadm PKI: what a joining control plane
 * needs to run its own key and join services, by name in the ticket and where the node keeps it.
 * kubeadm never writes a `constellation/` folder under its PKI directory, so the names cannot clash.
 */
export const CONTROL_PLANE_SERVICE_FILES = {
  'constellation/mastersecret': 'masterSecretFile',
  'constellation/salt': 'masterSaltFile',
  'constellation/join-config.json': 'joinConfigFile',
} as const satisfies Record<string, keyof NodePaths>
export type ControlPlaneServiceFileName = keyof typeof CONTROL_PLANE_SERVICE_FILES

/** Where a node's daemons read their config; fixed, since the config names the root the rest hang off. */
export const NODE_CONFIG_PATH = '/etc/constellation/node-config.yaml'

/**
 * Paths on a machine that boots from generated user data (cloud-init or Ignition). cluster-api's and
 * kubeadm's conventions fix them (capi.md) and the documents name them absolutely: no root here.
 */
export const USER_DATA_PATHS = {
  cloudInitKubeadmConfig: {
    init: '/run/kubeadm/kubeadm.yaml',
    join: '/run/kubeadm/kubeadm-join-config.yaml',
  },
  ignitionKubeadmConfig: '/etc/kubeadm.yml',
  ignitionKubeadmScript: '/etc/kubeadm.sh',
  /** kubeadm's default, as on our nodes. */
  certificatesDir: nodePaths().kubernetesPki,
  /** Attested mode: the node config's defaults for the machine image's TPM and LUKS2 state disk. */
  tpmDevice: '/dev/tpmrm0',
  stateDisk: '/dev/sdb',
} as const

/**
 * A file shipped in the package (templates/…). The package root is found by walking up from this
 * module: it sits at a different depth in src/ (tsx) and in the bundled dist/ chunks.
 */
export function packageFile(...segments: string[]): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`)
    dir = parent
  }
  return path.join(dir, ...segments)
}
