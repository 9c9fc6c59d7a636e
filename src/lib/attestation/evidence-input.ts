/** The auditor's inputs to checkEvidence, read and sorted; every fault is a usage error naming the file. */
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { messageOf, UsageError } from '../errors/index.js'
import { REPORT_SIZE as SNP_REPORT_SIZE } from './snp/layout.js'
import { readTdxCollateral, type TdxCollateral } from './tdx/index.js'
import { QUOTE_VERSION_V4, TEE_TYPE_TDX } from './tdx/layout.js'
import { readCertificates, readTrustRoots } from './trust-roots.js'
import { AMD_ROOT_KEYS, INTEL_SGX_ROOT_CA } from './vendor-roots.js'
import { oneLine } from './one-line-name.js'

/** A report is 1184 bytes and a quote a few KiB: more is not evidence. */
export const MAX_EVIDENCE_FILE_BYTES = 64 * 1024
const SNP_VERSIONS: readonly number[] = [2, 3, 5]
const REPORT_DATA_BYTES = 64

export type EvidenceKind = 'snp' | 'tdx'

/** TDX: u16 version 4 and TEE type 0x81; SEV-SNP: a known report version and exactly 1184 bytes. */
export function detectEvidenceKind(raw: Buffer, file: string): EvidenceKind {
  if (raw.length === 0) throw new UsageError(`${file} is empty: not an SEV-SNP report or a TDX quote`)
  if (raw.length >= 8 && raw.readUInt16LE(0) === QUOTE_VERSION_V4 && raw.readUInt32LE(4) === TEE_TYPE_TDX)
    return 'tdx'
  const snpVersion = raw.length >= 4 && SNP_VERSIONS.includes(raw.readUInt32LE(0))
  if (snpVersion && raw.length === SNP_REPORT_SIZE) return 'snp'
  if (snpVersion && raw.length < SNP_REPORT_SIZE)
    throw new UsageError(`${file} is a truncated SEV-SNP report: ${raw.length} of ${SNP_REPORT_SIZE} bytes`)
  if (snpVersion)
    throw new UsageError(
      `${file} is ${raw.length} bytes and starts like an SEV-SNP report, which is exactly ${SNP_REPORT_SIZE} bytes`,
      `cut the ${SNP_REPORT_SIZE}-byte report out of what encloses it (an Azure HCL report, an extended report's certificate table), e.g. with head -c ${SNP_REPORT_SIZE} when it comes first`,
    )
  throw new UsageError(
    `${file} is neither an SEV-SNP report (${SNP_REPORT_SIZE} bytes, version ${SNP_VERSIONS.join(', ')}) nor a TDX quote (version 4, TEE type 0x81): it starts with ${raw.subarray(0, 8).toString('hex')}`,
  )
}

export function readEvidence(file: string, cwd: string): Buffer {
  const at = path.resolve(cwd, file)
  let raw: Buffer
  try {
    const stat = statSync(at)
    if (!stat.isFile()) throw new UsageError(`${file} is not a regular file: give the raw report or quote`)
    if (stat.size > MAX_EVIDENCE_FILE_BYTES) throw tooBig(file, stat.size)
    raw = readFileSync(at)
  } catch (err: unknown) {
    if (err instanceof UsageError) throw err
    throw new UsageError(`reading ${file}: ${messageOf(err)}`)
  }
  if (raw.length > MAX_EVIDENCE_FILE_BYTES) throw tooBig(file, raw.length)
  return raw
}

const tooBig = (file: string, size: number) =>
  new UsageError(
    `${file} is ${size} bytes, more than ${MAX_EVIDENCE_FILE_BYTES}: not an SEV-SNP report or a TDX quote`,
  )

export function parseReportData(value: string | undefined): Buffer | undefined {
  if (value === undefined) return undefined
  const text = value.replace(/^0x/i, '')
  if (!/^([0-9a-fA-F]{2})+$/.test(text) || text.length > REPORT_DATA_BYTES * 2)
    throw new UsageError(
      `--report-data ${JSON.stringify(value)} is not hex of 1 to ${REPORT_DATA_BYTES} bytes`,
      'give the expected REPORT_DATA in hex; shorter values are padded with zero bytes',
    )
  return Buffer.concat([Buffer.from(text, 'hex')], REPORT_DATA_BYTES)
}

const AMD_ROOTS = Object.values(AMD_ROOT_KEYS).map((pem) => new X509Certificate(pem))
const INTEL_ROOT = new X509Certificate(INTEL_SGX_ROOT_CA)
/** Node gives no subject (undefined, though typed string) for an empty name. */

export function isVendorRoot(kind: EvidenceKind, cert: X509Certificate): boolean {
  return (kind === 'snp' ? AMD_ROOTS : [INTEL_ROOT]).some((r) => r.raw.equals(cert.raw))
}

export function pinnedRoots(kind: EvidenceKind, files: readonly string[], cwd: string): X509Certificate[] {
  if (files.length === 0) return kind === 'snp' ? AMD_ROOTS : [INTEL_ROOT]
  return files.flatMap((file) => {
    try {
      return readTrustRoots(path.resolve(cwd, file), cwd)
    } catch (err: unknown) {
      throw new UsageError(`--root ${file}: ${messageOf(err)}`)
    }
  })
}

/** --certs split into the one signer (not a CA) and its chain (CAs); a self-signed CA is not a root. */
export function sortCertificates(
  files: readonly string[],
  cwd: string,
  roots: readonly X509Certificate[],
): { signer?: X509Certificate; chain: X509Certificate[]; warnings: string[] } {
  const signers: { cert: X509Certificate; file: string }[] = []
  const chain: X509Certificate[] = []
  const warnings: string[] = []
  for (const file of files) {
    let certs: X509Certificate[]
    try {
      certs = readCertificates(path.resolve(cwd, file), cwd)
    } catch (err: unknown) {
      throw new UsageError(`--certs ${file}: ${messageOf(err)}`)
    }
    for (const cert of certs) {
      if (!cert.ca) signers.push({ cert, file })
      else chain.push(cert)
      const selfSigned = cert.ca && cert.checkIssued(cert)
      if (selfSigned && !roots.some((r) => r.raw.equals(cert.raw)))
        warnings.push(
          `${file} holds the root ${oneLine(cert.subject)}, which is not pinned: roots come only from the vendor's published keys or --root, never with the evidence`,
        )
    }
  }
  if (signers.length > 1)
    throw new UsageError(
      `--certs gives ${signers.length} signer (non-CA) certificates, ${signers.map((s) => `${oneLine(s.cert.subject)} in ${s.file}`).join(' and ')}: give exactly one VCEK or VLEK`,
    )
  return { signer: signers[0]?.cert, chain, warnings }
}

export function readCollateral(dir: string, cwd: string): TdxCollateral {
  try {
    return readTdxCollateral(path.resolve(cwd, dir))
  } catch (err: unknown) {
    throw new UsageError(`--collateral ${dir}: ${messageOf(err)}`)
  }
}
