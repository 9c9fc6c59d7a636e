/**
 * The Cluster API v1beta1 shapes this tool reads (the internal shape: convert.ts turns v1alpha3,
 * v1alpha4 and v1beta2 input into it), and the typed plan that renderers turn into user data.
 */

/** Cluster API's names (util/secret, api/v1beta1 common_types). */
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name'
export const CONTROL_PLANE_LABEL = 'cluster.x-k8s.io/control-plane'
/** The type of every Secret Cluster API writes: CA pairs, kubeconfigs, bootstrap data. */
export const CLUSTER_SECRET_TYPE = 'cluster.x-k8s.io/secret'

/** The Cluster API versions read (convert.ts, convert-spec.ts); v1beta1 is the internal shape. */
export const CAPI_VERSIONS = ['v1alpha3', 'v1alpha4', 'v1beta1', 'v1beta2'] as const
export type CapiVersion = (typeof CAPI_VERSIONS)[number]

export const OUTPUT_FORMATS = [
  'cloud-config',
  'ignition',
  'attested-cloud-config',
  'attested-ignition',
] as const
export type OutputFormat = (typeof OUTPUT_FORMATS)[number]
export const isOutputFormat = (v: unknown): v is OutputFormat =>
  typeof v === 'string' && (OUTPUT_FORMATS as readonly string[]).includes(v)

export type KeyValue = Record<string, string>
/** kubeadm-shaped configuration passes through as given (keys are sorted when serialized). */
export type KubeadmObject = Record<string, unknown>

export interface SecretRef {
  secret: { name: string; key: string }
}

export interface BootstrapFile {
  path: string
  owner?: string
  permissions?: string
  encoding?: 'base64' | 'gzip' | 'gzip+base64'
  append?: boolean
  content?: string
  contentFrom?: SecretRef
}

export interface BootstrapUser {
  name: string
  gecos?: string
  groups?: string
  homeDir?: string
  inactive?: boolean
  shell?: string
  passwd?: string
  passwdFrom?: SecretRef
  primaryGroup?: string
  lockPassword?: boolean
  sudo?: string
  sshAuthorizedKeys?: string[]
}

export interface DiskSetup {
  partitions?: Array<{ device: string; layout: boolean; overwrite?: boolean; tableType?: 'mbr' | 'gpt' }>
  filesystems?: Array<{
    device: string
    filesystem: string
    label?: string
    partition?: string
    overwrite?: boolean
    replaceFS?: string
    extraOpts?: string[]
  }>
}

export interface KubeadmConfigSpec {
  clusterConfiguration?: KubeadmObject
  initConfiguration?: KubeadmObject
  joinConfiguration?: KubeadmObject
  files?: BootstrapFile[]
  diskSetup?: DiskSetup
  mounts?: string[][]
  bootCommands?: string[]
  preKubeadmCommands?: string[]
  postKubeadmCommands?: string[]
  users?: BootstrapUser[]
  ntp?: { servers?: string[]; enabled?: boolean }
  format?: 'cloud-config' | 'ignition'
  verbosity?: number
  useExperimentalRetryJoin?: boolean
  ignition?: { containerLinuxConfig?: { additionalConfig?: string; strict?: boolean } }
}

export interface ObjectMeta {
  name: string
  namespace?: string
  labels?: KeyValue
  annotations?: KeyValue
}

export interface Condition {
  type: string
  /** "True", "False" or "Unknown". */
  status: string
  reason?: string
  message?: string
}

export interface Cluster {
  kind: 'Cluster'
  metadata: ObjectMeta
  spec?: {
    controlPlaneEndpoint?: { host?: string; port?: number }
    clusterNetwork?: {
      serviceDomain?: string
      services?: { cidrBlocks?: string[] }
      pods?: { cidrBlocks?: string[] }
    }
  }
  status?: {
    /** v1beta1's flag; v1beta2's `initialization.infrastructureProvisioned` converts to it. */
    infrastructureReady?: boolean
    /**
     * ControlPlaneInitialized (from v1alpha3's `controlPlaneInitialized` and v1beta2's
     * `initialization.controlPlaneInitialized` too), InfrastructureReady, …
     */
    conditions?: Condition[]
  }
}

export interface Machine {
  kind: 'Machine'
  metadata: ObjectMeta
  spec: {
    clusterName: string
    version?: string
    bootstrap?: { configRef?: { kind?: string; name: string } }
  }
  status?: { addresses?: Array<{ type: string; address: string }> }
}

/** Where an object came from, so every later error can point at it. */
export interface Origin {
  file: string
  line?: number
  kind: string
  name: string
}

/** The parsed input: one Cluster, its Machines, their bootstrap specs, and Secrets for contentFrom. */
export interface BootstrapObjects {
  clusters: Array<Cluster & { origin: Origin }>
  machines: Array<Machine & { origin: Origin }>
  /** KubeadmConfig and KubeadmConfigTemplate specs by `Kind/name`. */
  configs: Map<string, { spec: KubeadmConfigSpec; origin: Origin }>
  /** Secret data (decoded) by secret name, then key. */
  secrets: Map<string, Map<string, string>>
}

export type BootstrapRole = 'init' | 'control-plane-join' | 'worker-join'

/** One file on the node, with its content still in the input encoding. */
export interface NodeFile {
  path: string
  content: string
  encoding?: BootstrapFile['encoding']
  owner?: string
  permissions?: string
  append?: boolean
}

/**
 * Everything one machine's user data does, independent of the format. cloud-init and
 * Ignition renderers turn it into their document; neither decides anything.
 */
export interface BootstrapPlan {
  files: NodeFile[]
  bootCommands: string[]
  /** Commands run once, in order; in Ignition they form the kubeadm.sh script. */
  preCommands: string[]
  /** What kubeadm runs, or undefined in attested mode (the bootstrapper unit runs instead). */
  kubeadm?: { phase: 'init' | 'join'; config: string; verbosity?: number }
  postCommands: string[]
  /** systemd units the data enables (attested mode). */
  enableUnits: string[]
  users: BootstrapUser[]
  ntp?: { servers?: string[]; enabled?: boolean }
  diskSetup?: DiskSetup
  mounts: string[][]
}

/** The CA set in kubeadm's file layout. */
export interface CertificateAuthorities {
  ca: KeyPair
  etcdCa: KeyPair
  frontProxyCa: KeyPair
  /** Service-account signing key; `certPem` holds the PKIX public key. */
  sa: KeyPair
}

export interface KeyPair {
  certPem: string
  keyPem: string
}
