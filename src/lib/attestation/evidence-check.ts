/**
 * checkEvidence: an auditor's offline check of one raw SEV-SNP report or TDX quote, like AMD's
 * `snpguest verify`: signature and chain against pinned roots (the vendors' published roots
 * unless others are given), debug refused, everything else reported, not judged: TCB minimums
 * are zero, SMT and a migration agent are allowed (and shown), the launch measurement is shown,
 * REPORT_DATA is compared only when the auditor gives the expected value.
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { CliError, ExitCode, messageOf, UsageError } from '../errors/index.js'
import { AttestationError, EvidenceMismatchError } from './errors.js'
import { snpFields, tdxFields, type EvidenceFields } from './evidence-fields.js'
import { parseSnpReport, verifySnpEvidence, type SnpReport } from './snp/index.js'
import { REPORT_SIZE as SNP_REPORT_SIZE } from './snp/layout.js'
import {
  parseTdxQuote,
  pckExtensionOf,
  readTdxCollateral,
  verifyTdxQuote,
  type TdxCollateral,
  type TdxQuote,
} from './tdx/index.js'
import { QUOTE_VERSION_V4, TEE_TYPE_TDX } from './tdx/layout.js'
import { readCertificates, readTrustRoots } from './trust-roots.js'
import { AMD_ROOT_KEYS, INTEL_SGX_ROOT_CA } from './vendor-roots.js'

/** A report is 1184 bytes and a quote a few KiB: more is not evidence. */
export const MAX_EVIDENCE_FILE_BYTES = 64 * 1024
const SNP_VERSIONS: readonly number[] = [2, 3, 5]
const REPORT_DATA_BYTES = 64
/** Every status Intel defines but Revoked: the check reports the TCB and does not judge it. */
const REPORTED_TCB_STATUSES = [
  'UpToDate',
  'SWHardeningNeeded',
  'ConfigurationNeeded',
  'ConfigurationAndSWHardeningNeeded',
  'OutOfDate',
  'OutOfDateConfigurationNeeded',
] as const

export type EvidenceKind = 'snp' | 'tdx'

export interface EvidenceCheckInput {
  /** The raw report or quote, as the hardware returned it. */
  file: string
  /** SEV-SNP: files holding the VCEK or VLEK and its ASK/ASVK (PEM, several per file, or DER). */
  certs?: readonly string[]
  /** Replace the vendors' published roots (PEM or DER files of CA certificates). */
  roots?: readonly string[]
  /** TDX: a directory holding Intel's collateral (TDX_COLLATERAL_FILES). */
  collateralDir?: string
  /** Hex, at most 64 bytes; shorter values are padded with zero bytes. */
  reportData?: string
  /** Relative paths resolve against it. */
  cwd: string
  now?: () => Date
}

export interface RootSummary {
  /** One line, e.g. "OU=Engineering, …, CN=ARK-Milan". */
  subject: string
  /** The vendor's published root, not one given with --root. */
  vendor: boolean
}

export interface EvidenceCheck {
  file: string
  kind: EvidenceKind
  trusted: boolean
  /** Why it is not trusted; field, expected and found when one field was wrong. */
  refusal: { message: string; field?: string; expected?: string; found?: string } | null
  /** The pinned root the evidence chained to; null when refused before that was established. */
  root: RootSummary | null
  pinnedRoots: RootSummary[]
  reportDataChecked: boolean
  fields: EvidenceFields
  warnings: string[]
}

export interface EvidenceCheckOutcome {
  check: EvidenceCheck
  /** Set when refused: exit code 4, the message names the file and the refusal, data is the check. */
  error?: CliError
}

export function checkEvidence(input: EvidenceCheckInput): EvidenceCheckOutcome {
  const raw = readEvidence(input.file, input.cwd)
  const kind = detectEvidenceKind(raw, input.file)
  const reportData = parseReportData(input.reportData)
  const roots = pinnedRoots(kind, input.roots ?? [], input.cwd)
  if (kind === 'tdx' && (input.certs ?? []).length > 0)
    throw new UsageError(
      `${input.file} is a TDX quote, which carries its own PCK certificate chain: --certs is for SEV-SNP reports`,
    )
  if (kind === 'snp' && input.collateralDir !== undefined)
    throw new UsageError(
      `${input.file} is an SEV-SNP report: --collateral is Intel's TDX collateral, for TDX quotes`,
    )
  return kind === 'snp' ? checkSnp(input, raw, roots, reportData) : checkTdx(input, raw, roots, reportData)
}

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

function readEvidence(file: string, cwd: string): Buffer {
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

function parseReportData(value: string | undefined): Buffer | undefined {
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
const oneLine = (name: string) => name.split('\n').join(', ')

function isVendorRoot(kind: EvidenceKind, cert: X509Certificate): boolean {
  return (kind === 'snp' ? AMD_ROOTS : [INTEL_ROOT]).some((r) => r.raw.equals(cert.raw))
}

function pinnedRoots(kind: EvidenceKind, files: readonly string[], cwd: string): X509Certificate[] {
  if (files.length === 0) return kind === 'snp' ? AMD_ROOTS : [INTEL_ROOT]
  return files.flatMap((file) => {
    try {
      return readTrustRoots(path.resolve(cwd, file), cwd)
    } catch (err: unknown) {
      throw new UsageError(`--root ${file}: ${messageOf(err)}`)
    }
  })
}

const summary = (kind: EvidenceKind, cert: X509Certificate): RootSummary => ({
  subject: oneLine(cert.subject),
  vendor: isVendorRoot(kind, cert),
})

function checkSnp(
  input: EvidenceCheckInput,
  raw: Buffer,
  roots: X509Certificate[],
  reportData: Buffer | undefined,
): EvidenceCheckOutcome {
  const report = parsed(input.file, 'SEV-SNP report', () => parseSnpReport(raw))
  const { signer, chain, warnings } = sortCertificates(input, roots)
  const kind = report.signerInfo.signingKey
  if (kind !== 'none' && !signer)
    throw new UsageError(
      `${input.file} is signed by a ${kind}: give its certificate with --certs (none of the --certs files holds a non-CA certificate)`,
      `AMD's KDS serves it (https://kdsintf.amd.com/${kind.toLowerCase()}/v1/<product>/…), as do the cloud's metadata services; give the ASK/ASVK with --certs too`,
    )
  const base = baseCheck(input, 'snp', roots, reportData, snpFields(report), warnings)
  notes(base, report)
  try {
    const v = verifySnpEvidence(
      { report: raw, signer: signer?.raw, chain: chain.map((c) => c.raw) },
      {
        arks: roots,
        minimumTcb: { bootloader: 0, tee: 0, snp: 0, microcode: 0 },
        reportData: reportData ?? report.reportData,
        allowMigrationAgent: true,
        allowSmt: true,
        now: input.now,
      },
    )
    // launchMeasurement is deliberately unpinned; the verdict says it was shown, not checked
    base.warnings.push(...v.warnings.filter((w) => !w.includes('launch measurement not checked')))
    base.fields = { ...base.fields, product: v.product }
    return { check: { ...base, trusted: true, root: summary('snp', v.ark) } }
  } catch (err: unknown) {
    return refused(base, err, 'SEV-SNP report')
  }
}

function notes(check: EvidenceCheck, report: SnpReport): void {
  if (report.policyBits.migrateMa)
    check.warnings.push('POLICY.MIGRATE_MA is set: a migration agent may move this guest (allowed, shown)')
}

/** --certs split into the one signer (not a CA) and its chain (CAs); a self-signed CA is not a root. */
function sortCertificates(
  input: EvidenceCheckInput,
  roots: readonly X509Certificate[],
): { signer?: X509Certificate; chain: X509Certificate[]; warnings: string[] } {
  const signers: { cert: X509Certificate; file: string }[] = []
  const chain: X509Certificate[] = []
  const warnings: string[] = []
  for (const file of input.certs ?? []) {
    let certs: X509Certificate[]
    try {
      certs = readCertificates(path.resolve(input.cwd, file), input.cwd)
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

function checkTdx(
  input: EvidenceCheckInput,
  raw: Buffer,
  roots: X509Certificate[],
  reportData: Buffer | undefined,
): EvidenceCheckOutcome {
  const quote = parsed(input.file, 'TDX quote', () => parseTdxQuote(raw))
  const collateral = input.collateralDir === undefined ? undefined : readCollateral(input)
  const base = baseCheck(input, 'tdx', roots, reportData, tdxFields(quote), [])
  base.fields = { ...base.fields, ...pckFields(quote) }
  try {
    const v = verifyTdxQuote(raw, {
      intelRoots: roots,
      reportData: reportData ?? quote.body.reportData,
      minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(quote.body.teeTcbSvn.length) },
      collateral,
      acceptedTcbStatuses: REPORTED_TCB_STATUSES,
      now: input.now,
    })
    base.fields = { ...base.fields, tcbStatus: v.tcbStatus, qeTcbStatus: v.qeTcbStatus }
    base.warnings.push(...v.warnings)
    for (const [what, status] of [
      ['TCB status', v.tcbStatus],
      ['QE TCB status', v.qeTcbStatus],
    ] as const)
      if (collateral && status !== 'UpToDate')
        base.warnings.push(
          `${what} is ${status} (reported, not judged): Intel knows of fixes this platform lacks`,
        )
    return { check: { ...base, trusted: true, root: summary('tdx', v.root) } }
  } catch (err: unknown) {
    return refused(base, err, 'TDX quote')
  }
}

/** FMSPC and PCESVN as the quote's PCK certificate states them (trusted only if the check passes). */
function pckFields(quote: TdxQuote): EvidenceFields {
  const leaf = quote.pckChain[0]
  if (!leaf) return {}
  try {
    const pck = pckExtensionOf(leaf)
    return { fmspc: pck.fmspc, pckPceSvn: pck.pceSvn }
  } catch {
    return { fmspc: 'unreadable (no SGX extension in the PCK certificate)' }
  }
}

function readCollateral(input: EvidenceCheckInput): TdxCollateral {
  const dir = input.collateralDir ?? ''
  try {
    return readTdxCollateral(path.resolve(input.cwd, dir))
  } catch (err: unknown) {
    throw new UsageError(`--collateral ${dir}: ${messageOf(err)}`)
  }
}

function baseCheck(
  input: EvidenceCheckInput,
  kind: EvidenceKind,
  roots: readonly X509Certificate[],
  reportData: Buffer | undefined,
  fields: EvidenceFields,
  warnings: string[],
): EvidenceCheck {
  return {
    file: input.file,
    kind,
    trusted: false,
    refusal: null,
    root: null,
    pinnedRoots: roots.map((r) => summary(kind, r)),
    reportDataChecked: reportData !== undefined,
    fields,
    warnings,
  }
}

/** A structural fault after the kind is known: the file is not readable evidence (exit 2). */
function parsed<T>(file: string, what: string, parse: () => T): T {
  try {
    return parse()
  } catch (err: unknown) {
    if (err instanceof AttestationError)
      throw new UsageError(`${file} is not a readable ${what} (truncated or malformed): ${err.message}`)
    throw err
  }
}

function refused(base: EvidenceCheck, err: unknown, what: string): EvidenceCheckOutcome {
  if (!(err instanceof AttestationError)) throw err
  const refusal =
    err instanceof EvidenceMismatchError
      ? { message: err.message, field: err.field, expected: err.expected, found: err.found }
      : { message: err.message }
  const check = { ...base, refusal }
  const error = new CliError(`${base.file}: the ${what} is NOT trusted`, {
    exitCode: ExitCode.AttestationFailed,
    cause: err,
    data: { ...check },
  })
  return { check, error }
}
