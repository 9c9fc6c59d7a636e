/** The operator's config (`constellation-conf.yaml`) and state (`constellation-state.yaml`) shapes. */
import type { AttestationVariant } from '../attestation/index.js'

import type { MeasurementsConfig } from '../attestation/index.js'

export const CONFIG_VERSION = 'v4'
export const STATE_VERSION = 'v1'

/** The config key under `attestation:` for each variant. */
export const ATTESTATION_CONFIG_KEYS = {
  'qemu-vtpm': 'qemuVTPM',
  'tpm-ek': 'tpmEK',
} as const satisfies Record<AttestationVariant, string>
export type AttestationConfigKey = (typeof ATTESTATION_CONFIG_KEYS)[AttestationVariant]

export type { MeasurementEntry, MeasurementsConfig } from '../attestation/index.js'

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
    tpmEK?: {
      measurements: MeasurementsConfig
      /**
       * Manufacturer CA certificates: PEM text, or files (PEM or DER). loadConfig resolves
       * relative paths against the config file's directory.
       */
      roots: string[]
    }
  }
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
