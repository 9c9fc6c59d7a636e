/**
 * `config generate`'s confidential-VM sections: the vendors' roots, minimum versions with where
 * they come from, and comments saying what the operator must still fill in.
 */
import { Document, isMap, isScalar, type Pair } from 'yaml'
import { AMD_ROOT_KEYS_BUNDLE, INTEL_SGX_ROOT_CA } from '../attestation/index.js'
import type { SnpVariant, TdxVariant } from './cvm-sections.js'
import {
  ATTESTATION_CONFIG_KEYS,
  type ClusterConfig,
  type MeasurementsConfig,
  type SnpAttestationConfig,
  type TdxAttestationConfig,
} from './types.js'

/**
 * Constellation writes `latest` for these and resolves it from its attestation config API, which
 * this tool does not use. These are the TCB of Constellation's real Azure (Milan) report in
 * internal/attestation/snp/testdata, which its tests also use as that API's latest entry.
 */
export const DEFAULT_SNP_MINIMUM_TCB = {
  bootloaderVersion: 2,
  teeVersion: 0,
  snpVersion: 6,
  microcodeVersion: 93,
} as const

/** Intel's quoting enclave (the QE_VENDOR_ID of go-tdx-guest's real TDX quote, as Intel's DCAP spec names it). */
export const INTEL_QE_VENDOR_ID = '939a7233f79c4ca9940a0db3957f0607'

export function snpSection(measurements: MeasurementsConfig): SnpAttestationConfig {
  return {
    measurements,
    ...DEFAULT_SNP_MINIMUM_TCB,
    amdRootKey: AMD_ROOT_KEYS_BUNDLE,
    allowMigrationAgent: false,
    // Constellation's validators allow SMT on all three clouds: they launch SEV-SNP guests with SMT
    // allowed, so a policy without it refuses every node.
    allowSMT: true,
  }
}

export function tdxSection(measurements: MeasurementsConfig): TdxAttestationConfig {
  return {
    measurements,
    qeSVN: 0,
    pceSVN: 0,
    teeTCBSVN: '00'.repeat(16),
    qeVendorID: INTEL_QE_VENDOR_ID,
    intelRootKey: INTEL_SGX_ROOT_CA,
  }
}

const SNP_COMMENTS = {
  section:
    " Fill in before `init`: measurements (your node image's PCR values; `constellation config measurements`\n" +
    " reads them from a node you trust) and launchMeasurement (your image's SEV-SNP launch measurement,\n" +
    " 48 bytes as hex). amdRootKey holds AMD's root keys (ARK-Milan, -Genoa, -Turin) as AMD's KDS publishes them.",
  bootloaderVersion:
    ' Minimum TCB. Constellation writes `latest` and resolves it from its attestation config API, which this\n' +
    " tool does not use; these are the TCB of Constellation's real Azure Milan report (its tests use them as\n" +
    " that API's latest entry). They are Milan numbers: raise them to your platform's current TCB.",
  allowSMT:
    ' As in Constellation: AWS, GCP and Azure launch SEV-SNP guests with SMT allowed. Debug is always refused.',
}

const TDX_COMMENTS = {
  section:
    " Fill in before `init`: measurements (your node image's PCR values; `constellation config measurements`\n" +
    " reads them from a node you trust), mrTd and rtmrs (0-3: your image's MRTD and RTMR values, 48 bytes as\n" +
    ' hex each), and optionally collateral (a directory with Intel PCS TCB info and QE identity) so that the\n' +
    " platform's TCB status is checked. intelRootKey is Intel's SGX root CA as Intel publishes it.",
  qeSVN:
    ' Minimum versions. Constellation writes `latest` and resolves it from its attestation config API, which\n' +
    " this tool does not use; zero accepts any: raise them to your platform's. qeVendorID is Intel's quoting\n" +
    ' enclave. mrSeam and xfam are unset as in Constellation (an MRSEAM pin blocks TDX module updates).',
}

/** The config as YAML, with the comments of its CVM section (`variant`'s). */
export function renderCvmConfig(config: ClusterConfig, variant: SnpVariant | TdxVariant): string {
  const doc = new Document(config, { aliasDuplicateObjects: false })
  const key = ATTESTATION_CONFIG_KEYS[variant]
  const comments: Record<string, string> = variant.endsWith('-tdx') ? TDX_COMMENTS : SNP_COMMENTS
  const attestation = doc.get('attestation', true)
  const sectionPair = isMap(attestation) ? findPair(attestation.items, key) : undefined
  const { section, ...fields } = comments
  if (sectionPair && isScalar(sectionPair.key)) sectionPair.key.commentBefore = section
  const body = sectionPair?.value
  for (const [field, comment] of Object.entries(fields)) {
    const pair = isMap(body) ? findPair(body.items, field) : undefined
    if (pair && isScalar(pair.key)) pair.key.commentBefore = comment
  }
  return doc.toString({ lineWidth: 0 })
}

function findPair(items: readonly Pair[], key: string): Pair | undefined {
  return items.find((p) => isScalar(p.key) && p.key.value === key)
}
