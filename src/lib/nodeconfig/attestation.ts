/**
 * The node config's `attestation` section: the settings of the node's variant that its validators
 * (the join service's) need beyond the measurements, which come from the cluster's join-config.
 */
import { readTrustRoots } from '../attestation/index.js'
import {
  ATTESTATION_CONFIG_KEYS,
  cvmSectionProblems,
  snpSettings,
  tdxSettings,
  type NodeSnpAttestationConfig,
  type NodeTdxAttestationConfig,
  type SnpSettings,
  type TdxSettings,
} from '../config/index.js'
import type { Problem } from '../yaml/index.js'
import type { NodeConfig } from './node-config.js'

/** Each variant's section, under the same keys as in the operator's config. */
export interface NodeAttestationConfig {
  tpmEK?: { roots: string[] }
  awsSEVSNP?: NodeSnpAttestationConfig
  gcpSEVSNP?: NodeSnpAttestationConfig
  azureSEVSNP?: NodeSnpAttestationConfig
  qemuTDX?: NodeTdxAttestationConfig
  azureTDX?: NodeTdxAttestationConfig
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** A section belongs to the node's variant; roots must be CA certificates, collateral a directory. */
export function nodeAttestationProblems(raw: Record<string, unknown>): Problem[] {
  const attestation = raw.attestation
  if (!isRecord(attestation)) return []
  const own = Object.entries(ATTESTATION_CONFIG_KEYS).find(([v]) => v === raw.attestationVariant)?.[1]
  const problems: Problem[] = []
  for (const key of Object.keys(attestation)) {
    if (key !== own)
      problems.push({
        path: ['attestation', key],
        message: `is used only with attestationVariant ${variantOf(key)}; remove it`,
      })
  }
  problems.push(...tpmEkRootProblems(attestation.tpmEK))
  // relative paths are the schema's to refuse: a node has no directory they could be relative to
  problems.push(...cvmSectionProblems(attestation, '/', ['attestation'], true))
  return problems
}

const variantOf = (key: string) =>
  Object.entries(ATTESTATION_CONFIG_KEYS).find(([, k]) => k === key)?.[0] ?? key

function tpmEkRootProblems(tpmEK: unknown): Problem[] {
  if (!isRecord(tpmEK) || !Array.isArray(tpmEK.roots)) return []
  const problems: Problem[] = []
  tpmEK.roots.forEach((file: unknown, i) => {
    if (typeof file !== 'string' || !file.startsWith('/')) return // the schema says so
    try {
      readTrustRoots(file, '/')
    } catch (err: unknown) {
      const message = err instanceof Error ? err.message : String(err)
      problems.push({ path: ['attestation', 'tpmEK', 'roots', i], message })
    }
  })
  return problems
}

/**
 * The CVM settings a join service validates joins with; undefined for variants that have none
 * (qemu-vtpm, tpm-ek) or when the node config carries no section for its variant.
 */
export function nodeCvmSettings(
  config: Pick<NodeConfig, 'attestationVariant' | 'attestation'>,
): SnpSettings | TdxSettings | undefined {
  const a = config.attestation ?? {}
  const at = (key: string) => ['attestation', key]
  switch (config.attestationVariant) {
    case 'qemu-vtpm':
    case 'tpm-ek':
      return undefined
    case 'aws-sev-snp':
      return a.awsSEVSNP && snpSettings(a.awsSEVSNP, '/', at('awsSEVSNP'))
    case 'gcp-sev-snp':
      return a.gcpSEVSNP && snpSettings(a.gcpSEVSNP, '/', at('gcpSEVSNP'))
    case 'azure-sev-snp':
      return a.azureSEVSNP && snpSettings(a.azureSEVSNP, '/', at('azureSEVSNP'))
    case 'qemu-tdx':
      return a.qemuTDX && tdxSettings(a.qemuTDX, '/', at('qemuTDX'))
    case 'azure-tdx':
      return a.azureTDX && tdxSettings(a.azureTDX, '/', at('azureTDX'))
  }
}
