/** The operator's config (`constellation-conf.yaml`) and state (`constellation-state.yaml`) shapes. */
import type { AttestationVariant, MeasurementsConfig } from '../attestation/index.js'

export const CONFIG_VERSION = 'v4'
export const STATE_VERSION = 'v1'

/** The config key under `attestation:` for each variant. */
export const ATTESTATION_CONFIG_KEYS = {
  'qemu-vtpm': 'qemuVTPM',
  'tpm-ek': 'tpmEK',
  'aws-sev-snp': 'awsSEVSNP',
  'gcp-sev-snp': 'gcpSEVSNP',
  'azure-sev-snp': 'azureSEVSNP',
  'qemu-tdx': 'qemuTDX',
  'azure-tdx': 'azureTDX',
} as const satisfies Record<AttestationVariant, string>
export type AttestationConfigKey = (typeof ATTESTATION_CONFIG_KEYS)[AttestationVariant]

export type { MeasurementEntry, MeasurementsConfig } from '../attestation/index.js'

/**
 * An SEV-SNP variant's section, with Constellation's field names (launchMeasurement, amdSigningKey
 * as a pin, and the policy switches are this tool's). Versions are the minimum TCB components a
 * report's reported and launch TCB must carry. Certificates are PEM text or a path; loadConfig
 * resolves relative paths against the config file's directory.
 */
export interface SnpAttestationConfig {
  measurements: MeasurementsConfig
  bootloaderVersion: number
  teeVersion: number
  snpVersion: number
  microcodeVersion: number
  /** Hex of the 48-byte launch MEASUREMENT; absent: not checked (validators warn). */
  launchMeasurement?: string
  /** AMD root keys (ARKs), PEM text or a file; one bundle may hold several products' ARKs. */
  amdRootKey: string
  /** Optional pin of the ASK/ASVK as well (PEM text or file). */
  amdSigningKey?: string
  /** Guest policy bits an operator may allow (false when the file omits them); debug is always refused. */
  allowMigrationAgent: boolean
  allowSMT: boolean
}

/** A TDX variant's section (Constellation's azureTDX field names, and this tool's additions); hex strings. */
export interface TdxAttestationConfig {
  measurements: MeasurementsConfig
  qeSVN: number
  pceSVN: number
  /** 16 bytes: the minimum TEE_TCB_SVN, component by component. */
  teeTCBSVN: string
  /** 16 bytes; absent: not checked. */
  qeVendorID?: string
  /** 48 bytes; absent: not checked (Constellation sets none: a pin would block SEAM module updates). */
  mrSeam?: string
  /** 8 bytes; absent: not checked. */
  xfam?: string
  /** 8 bytes TD attributes the quote must carry exactly (debug is refused regardless). */
  tdAttributes?: string
  mrTd?: string
  /** RTMR index (0-3) → 48-byte hex value. */
  rtmrs?: Partial<Record<'0' | '1' | '2' | '3', string>>
  /** Intel SGX root CA, PEM text or a file. */
  intelRootKey: string
  /** A directory holding TCB info and QE identity collateral (Intel PCS responses with issuer chains). */
  collateral?: string
}

export interface TpmEkAttestationConfig {
  measurements: MeasurementsConfig
  /**
   * Manufacturer CA certificates: PEM text, or files (PEM or DER). loadConfig resolves
   * relative paths against the config file's directory.
   */
  roots: string[]
}

/** The node config's form of a section: the join service takes measurements from the join-config. */
export type NodeSnpAttestationConfig = Omit<SnpAttestationConfig, 'measurements'>
export type NodeTdxAttestationConfig = Omit<TdxAttestationConfig, 'measurements'>

export interface ComponentConfig {
  url: string
  hash?: string
  installPath: string
  extract?: boolean
}

export interface ChartConfig {
  name: string
  /** A local chart directory or packaged .tgz, or a chart name in `repository`. */
  chart: string
  repository?: string
  version: string
  namespace: string
  valuesFile?: string
}

export interface ClusterConfig {
  version: string
  name: string
  kubernetesVersion: string
  serviceCIDR: string
  /** Exactly one variant's section. */
  attestation: {
    qemuVTPM?: { measurements: MeasurementsConfig }
    tpmEK?: TpmEkAttestationConfig
    awsSEVSNP?: SnpAttestationConfig
    gcpSEVSNP?: SnpAttestationConfig
    azureSEVSNP?: SnpAttestationConfig
    qemuTDX?: TdxAttestationConfig
    azureTDX?: TdxAttestationConfig
  }
  /**
   * The image builder's public key (PEM text, or a file relative to the config) that signed
   * measurements must verify under (`config fetch-measurements`).
   */
  measurementsPublicKey?: string
  /** Replaces the versions table's components (air-gapped mirrors, tests). */
  kubernetesComponents?: ComponentConfig[]
  upgrade?: { charts?: ChartConfig[] }
}

export interface ClusterState {
  version: string
  infrastructure: {
    uid: string
    clusterEndpoint: string
    inClusterEndpoint: string
    /** Hex of the plaintext init secret. */
    initSecret: string
    apiServerCertSANs: string[]
    name: string
    ipCidrNode: string
  }
  clusterValues: {
    clusterID: string
    ownerID: string
    measurementSalt: string
  }
}
