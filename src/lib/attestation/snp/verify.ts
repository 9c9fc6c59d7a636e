/**
 * verifySnpEvidence: an SEV-SNP report is trusted only when its signer (VCEK or VLEK) chains
 * through an ASK/ASVK to an ARK the policy pins, its signature verifies under that signer, the
 * signer's TCB extensions are the TCB the report claims, and every policy field holds.
 */
import { verify, X509Certificate } from 'node:crypto'
import { AMD_ROOT_KEYS } from '../vendor-roots.js'
import { AttestationError, EvidenceMismatchError } from '../errors.js'
import { chainToPinnedArk, signerCertificate } from './chain.js'
import { oneLine } from '../one-line-name.js'
import { readAmdExtensions, type AmdKeyExtensions, type TcbLevels } from './amd-extensions.js'
import { SIGNATURE_ALGO_ECDSA_P384_SHA384 } from './layout.js'
import { parseSnpReport, type SnpReport } from './report.js'

export interface SnpEvidence {
  report: Buffer
  /** The VCEK or VLEK certificate, DER or PEM. */
  signer?: Buffer
  /** ASK or ASVK (an ARK here is ignored: the ARK comes only from the policy), DER or PEM. */
  chain?: readonly Buffer[]
}

export interface SnpPolicy {
  /** Pinned in config; never taken from the evidence. */
  arks: readonly X509Certificate[]
  /** Optional ASK/ASVK pin. */
  signingKeyPins?: readonly X509Certificate[]
  minimumTcb: TcbLevels
  /** 48 bytes; undefined → not checked, and a warning says so. */
  launchMeasurement?: Buffer
  /** The expected 64 bytes (the caller computes the binding). */
  reportData: Buffer
  allowMigrationAgent: boolean
  allowSmt: boolean
  now?: () => Date
}

export interface SnpVerified {
  report: SnpReport
  signer: 'VCEK' | 'VLEK'
  product: string
  ark: X509Certificate
  /** The ARK that verified is one of AMD_ROOT_KEYS (vendor-roots.ts). */
  rootIsAmds: boolean
  warnings: string[]
}

const AMD_ARKS = Object.values(AMD_ROOT_KEYS).map((pem) => new X509Certificate(pem).raw)
const hex = (b: Buffer) => b.toString('hex')
const TCB_PARTS: readonly (keyof TcbLevels)[] = ['bootloader', 'tee', 'snp', 'microcode']

export function verifySnpEvidence(evidence: SnpEvidence, policy: SnpPolicy): SnpVerified {
  if (policy.reportData.length !== 64)
    throw new AttestationError(`SEV-SNP policy: reportData is ${policy.reportData.length} bytes, expected 64`)
  const report = parseSnpReport(evidence.report)
  if (report.signatureAlgo !== SIGNATURE_ALGO_ECDSA_P384_SHA384)
    throw new EvidenceMismatchError(
      'SIGNATURE_ALGO',
      '1 (ECDSA P-384 with SHA-384)',
      String(report.signatureAlgo),
      'SEV-SNP report',
    )
  const kind = report.signerInfo.signingKey
  if (kind === 'none')
    throw new AttestationError('SEV-SNP report: SIGNER_INFO.SIGNING_KEY is 7 (none): the report is unsigned')
  const now = (policy.now ?? (() => new Date()))()
  const signer = signerCertificate(evidence.signer, kind)
  const { ark } = chainToPinnedArk(signer, kind, evidence.chain ?? [], policy, now)
  const extensions = amdExtensionsOf(signer, kind)
  checkSignerKind(kind, extensions.hwId !== undefined, extensions.cspId !== undefined)
  checkReportSignature(report, signer, kind)
  // Turin's TCB_VERSION puts an FMC level in byte 0 and shifts the rest: decoded as Milan's it would be wrong
  if (productOf(extensions.productName, ark) === 'Turin')
    throw new AttestationError(
      'SEV-SNP report from a Turin processor: its TCB_VERSION layout is not supported yet',
    )

  for (const part of TCB_PARTS) {
    if (extensions.tcb[part] !== report.reportedTcb[part])
      throw new EvidenceMismatchError(
        `REPORTED_TCB.${part}`,
        `${extensions.tcb[part]} (the ${kind} certificate's ${part} SPL)`,
        String(report.reportedTcb[part]),
        'SEV-SNP report',
      )
  }
  if (
    kind === 'VCEK' &&
    !report.signerInfo.maskChipKey &&
    extensions.hwId &&
    !extensions.hwId.equals(report.chipId)
  )
    throw new EvidenceMismatchError(
      'CHIP_ID',
      `${hex(extensions.hwId)} (the VCEK's hwID)`,
      hex(report.chipId),
      'SEV-SNP report',
    )
  for (const part of TCB_PARTS) {
    if (report.reportedTcb[part] < policy.minimumTcb[part])
      throw new EvidenceMismatchError(
        `REPORTED_TCB.${part}`,
        `at least ${policy.minimumTcb[part]}`,
        String(report.reportedTcb[part]),
        'SEV-SNP report',
      )
  }
  checkGuestPolicy(report, policy)
  const warnings: string[] = []
  if (policy.launchMeasurement === undefined)
    warnings.push('SEV-SNP launch measurement not checked: the policy pins none')
  else if (!policy.launchMeasurement.equals(report.measurement))
    throw new EvidenceMismatchError(
      'MEASUREMENT',
      hex(policy.launchMeasurement),
      hex(report.measurement),
      'SEV-SNP report',
    )
  if (!policy.reportData.equals(report.reportData))
    throw new EvidenceMismatchError(
      'REPORT_DATA',
      hex(policy.reportData),
      hex(report.reportData),
      'SEV-SNP report',
    )
  const product = productOf(extensions.productName, ark)
  return {
    report,
    signer: kind,
    product,
    ark,
    rootIsAmds: AMD_ARKS.some((raw) => raw.equals(ark.raw)),
    warnings,
  }
}

/**
 * Reading AMD's extensions costs about 1 ms (a full ASN.1 parse of the certificate), more than the
 * signature checks; nodes on one host share their VCEK, so the extensions of certificates whose
 * chain already verified are kept, keyed by the certificate's SHA-256, a bounded number of them.
 */
const EXTENSIONS_CACHE = new Map<string, AmdKeyExtensions>()
const EXTENSIONS_CACHE_SIZE = 64

function amdExtensionsOf(signer: X509Certificate, kind: 'VCEK' | 'VLEK'): AmdKeyExtensions {
  const cached = EXTENSIONS_CACHE.get(signer.fingerprint256)
  if (cached) return cached
  const read = readAmdExtensions(signer.raw, kind)
  if (EXTENSIONS_CACHE.size >= EXTENSIONS_CACHE_SIZE) {
    const oldest = EXTENSIONS_CACHE.keys().next().value
    if (oldest !== undefined) EXTENSIONS_CACHE.delete(oldest)
  }
  EXTENSIONS_CACHE.set(signer.fingerprint256, read)
  return read
}

/** A VCEK carries the chip's hwID, a VLEK the CSP's ID: the certificate must be the kind the report names. */
function checkSignerKind(kind: 'VCEK' | 'VLEK', hasHwId: boolean, hasCspId: boolean): void {
  const found = hasHwId && !hasCspId ? 'VCEK' : hasCspId && !hasHwId ? 'VLEK' : undefined
  if (found !== kind)
    throw new EvidenceMismatchError(
      'signer certificate',
      `a ${kind} (the report's SIGNING_KEY)`,
      found ? `a ${found}` : 'neither a VCEK (hwID extension) nor a VLEK (cspId extension)',
      'SEV-SNP evidence',
    )
}

function checkReportSignature(report: SnpReport, signer: X509Certificate, kind: string): void {
  const key = signer.publicKey
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (key.asymmetricKeyType !== 'ec' || curve !== 'secp384r1')
    throw new EvidenceMismatchError(
      `${kind} key`,
      'ECDSA P-384',
      `${key.asymmetricKeyType ?? 'unknown'} ${curve ?? ''}`.trim(),
    )
  const signature = Buffer.concat([report.signature.r, report.signature.s])
  if (!verify('sha384', report.signedBytes, { key, dsaEncoding: 'ieee-p1363' }, signature))
    throw new EvidenceMismatchError(
      'SIGNATURE',
      `an ECDSA P-384 signature by the ${kind} (${oneLine(signer.subject)}) over bytes 0x000–0x29F`,
      `r=${hex(report.signature.r)} s=${hex(report.signature.s)}, which does not verify`,
      'SEV-SNP report',
    )
}

function checkGuestPolicy(report: SnpReport, policy: SnpPolicy): void {
  const bits = report.policyBits
  const found = `1 (policy 0x${report.policy.toString(16)})`
  if (bits.debug)
    throw new EvidenceMismatchError('POLICY.DEBUG', '0 (debugging is never allowed)', found, 'SEV-SNP report')
  if (bits.migrateMa && !policy.allowMigrationAgent)
    throw new EvidenceMismatchError(
      'POLICY.MIGRATE_MA',
      '0 (no migration agent allowed)',
      found,
      'SEV-SNP report',
    )
  if (bits.smt && !policy.allowSmt)
    throw new EvidenceMismatchError('POLICY.SMT', '0 (SMT not allowed)', found, 'SEV-SNP report')
}

/** "Milan-B0" → "Milan"; the ARK's CN ("ARK-Milan") when the certificate names no product. */
function productOf(productName: string | undefined, ark: X509Certificate): string {
  if (productName) return productName.split('-')[0] ?? productName
  const cn = /CN=ARK-([^\n,]+)/.exec(ark.subject)?.[1]
  return cn ?? 'unknown'
}
