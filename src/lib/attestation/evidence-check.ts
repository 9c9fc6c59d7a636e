/**
 * checkEvidence: an auditor's offline check of one raw SEV-SNP report or TDX quote, like AMD's
 * `snpguest verify`: signature and chain against pinned roots (the vendors' published roots
 * unless others are given), debug refused, everything else reported, not judged: TCB minimums
 * are zero, SMT and a migration agent are allowed (and shown), the launch measurement is shown,
 * REPORT_DATA is compared only when the auditor gives the expected value.
 */
import type { X509Certificate } from 'node:crypto'
import { CliError, ExitCode, UsageError } from '../errors/index.js'
import { AttestationError, EvidenceMismatchError } from './errors.js'
import { snpFields, tdxFields, type EvidenceFields } from './evidence-fields.js'
import {
  detectEvidenceKind,
  isVendorRoot,
  parseReportData,
  pinnedRoots,
  readCollateral,
  readEvidence,
  sortCertificates,
  type EvidenceKind,
} from './evidence-input.js'
import { oneLine } from './one-line-name.js'
import { parseSnpReport, verifySnpEvidence, type SnpReport } from './snp/index.js'
import { parseTdxQuote, pckExtensionOf, verifyTdxQuote, type TdxQuote } from './tdx/index.js'

/** Every status Intel defines but Revoked: the check reports the TCB and does not judge it. */
const REPORTED_TCB_STATUSES = [
  'UpToDate',
  'SWHardeningNeeded',
  'ConfigurationNeeded',
  'ConfigurationAndSWHardeningNeeded',
  'OutOfDate',
  'OutOfDateConfigurationNeeded',
] as const

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
  const { signer, chain, warnings } = sortCertificates(input.certs ?? [], input.cwd, roots)
  const kind = report.signerInfo.signingKey
  if (kind !== 'none' && !signer)
    throw new UsageError(
      `${input.file} is signed by a ${kind}: give its certificate with --certs (none of the --certs files holds a non-CA certificate)`,
      `AMD's KDS serves it (https://kdsintf.amd.com/${kind.toLowerCase()}/v1/<product>/…), as do the cloud's metadata services; give the ASK/ASVK with --certs too`,
    )
  if (kind !== 'none' && chain.length === 0)
    throw new UsageError(
      `${input.file} is signed by a ${kind}, whose ${kind === 'VCEK' ? 'ASK' : 'ASVK'} must come with --certs (none of the --certs files holds a CA certificate)`,
      `AMD's KDS serves the chain (https://kdsintf.amd.com/${kind.toLowerCase()}/v1/<product>/cert_chain); the ARK in it is ignored, roots are pinned`,
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

function checkTdx(
  input: EvidenceCheckInput,
  raw: Buffer,
  roots: X509Certificate[],
  reportData: Buffer | undefined,
): EvidenceCheckOutcome {
  const quote = parsed(input.file, 'TDX quote', () => parseTdxQuote(raw))
  const collateral =
    input.collateralDir === undefined ? undefined : readCollateral(input.collateralDir, input.cwd)
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
