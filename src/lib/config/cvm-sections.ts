/**
 * The confidential-VM sections' files: which keys name certificates and directories, what is wrong
 * with them (by key path), and their paths resolved against the directory of the file that names them.
 */
import { statSync } from 'node:fs'
import path from 'node:path'
import { readTrustRoots } from '../attestation/index.js'
import type { KeyPath, Problem } from '../yaml/index.js'
import { ATTESTATION_CONFIG_KEYS } from './types.js'

export const SNP_VARIANTS = ['aws-sev-snp', 'gcp-sev-snp', 'azure-sev-snp'] as const
export type SnpVariant = (typeof SNP_VARIANTS)[number]
export const TDX_VARIANTS = ['qemu-tdx', 'azure-tdx'] as const
export type TdxVariant = (typeof TDX_VARIANTS)[number]

export const SNP_KEYS: readonly string[] = SNP_VARIANTS.map((v) => ATTESTATION_CONFIG_KEYS[v])
export const TDX_KEYS: readonly string[] = TDX_VARIANTS.map((v) => ATTESTATION_CONFIG_KEYS[v])

/** Keys holding certificates (PEM text or a file), per kind of section. */
const CERTIFICATE_KEYS = { snp: ['amdRootKey', 'amdSigningKey'], tdx: ['intelRootKey'] } as const

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

const isPem = (entry: string) => entry.includes('-----BEGIN')

const kindOf = (key: string): 'snp' | 'tdx' | undefined =>
  SNP_KEYS.includes(key) ? 'snp' : TDX_KEYS.includes(key) ? 'tdx' : undefined

/**
 * Problems of the CVM sections under `attestation` (at `prefix`): a root or pin that is no CA
 * certificate or cannot be read, a collateral path that is no directory. Wrong types are the schema's,
 * and so are relative paths where `absoluteOnly` (the node config).
 */
export function cvmSectionProblems(
  attestation: unknown,
  baseDir: string,
  prefix: KeyPath,
  absoluteOnly = false,
): Problem[] {
  const skip = (entry: string) => entry === '' || (absoluteOnly && !isPem(entry) && !path.isAbsolute(entry))
  if (!isRecord(attestation)) return []
  const problems: Problem[] = []
  for (const [key, section] of Object.entries(attestation)) {
    const kind = kindOf(key)
    if (!kind || !isRecord(section)) continue
    for (const field of CERTIFICATE_KEYS[kind]) {
      const entry = section[field]
      if (typeof entry !== 'string' || skip(entry)) continue
      try {
        readTrustRoots(entry, baseDir)
      } catch (err: unknown) {
        const message = err instanceof Error ? err.message : String(err)
        problems.push({ path: [...prefix, key, field], message })
      }
    }
    const collateral = kind === 'tdx' ? section.collateral : undefined
    if (typeof collateral === 'string' && !skip(collateral)) {
      const problem = directoryProblem(path.resolve(baseDir, collateral))
      if (problem) problems.push({ path: [...prefix, key, 'collateral'], message: problem })
    }
  }
  return problems
}

function directoryProblem(dir: string): string | undefined {
  try {
    if (!statSync(dir).isDirectory())
      return `${dir} is not a directory; name the directory that holds the TCB info and QE identity files`
  } catch (err: unknown) {
    return `reading ${dir}: ${err instanceof Error ? err.message : String(err)}`
  }
  return undefined
}

/** A section with its certificate and directory paths absolute (PEM text stays as it is). */
export function resolveCvmPaths<T extends object>(key: string, section: T, baseDir: string): T {
  const kind = kindOf(key)
  if (!kind) return section
  const fields: string[] = [...CERTIFICATE_KEYS[kind], ...(kind === 'tdx' ? ['collateral'] : [])]
  const out: Record<string, unknown> = { ...(section as Record<string, unknown>) }
  for (const field of fields) {
    const value = out[field]
    if (typeof value === 'string' && value !== '' && !isPem(value)) out[field] = path.resolve(baseDir, value)
  }
  if (kind === 'snp') {
    out.allowMigrationAgent ??= false
    out.allowSMT ??= false
  }
  return out as T
}
