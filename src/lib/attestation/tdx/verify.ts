/**
 * verifyTdxQuote: a TDX quote v4 checked end to end against the operator's policy. Signatures
 * first (attestation key over header ‖ body, PCK chain to a pinned Intel root, QE report under
 * the PCK key, QE report data binding the attestation key), then the TD's fields against the
 * policy, then, given Intel's collateral, the TCB status.
 */
import {
  createHash,
  createPublicKey,
  verify as verifySignature,
  type KeyObject,
  type X509Certificate,
} from 'node:crypto'
import { AttestationError, EvidenceMismatchError } from '../errors.js'
import { hex } from './bytes.js'
import { verifyToPinnedRoot, type VerifiedChain } from './chain.js'
import type { TdxCollateral } from './collateral.js'
import { REPORT_DATA_SIZE, TD_ATTRIBUTE_DEBUG, TEE_TCB_SVN_SIZE } from './layout.js'
import { pckExtensionOf } from './pck-extension.js'
import { parseTdxQuote, type TdxQuote } from './quote.js'
import { checkCollateral, evaluateQeIdentity, evaluateTcb } from './tcb.js'

export interface TdxPolicy {
  /** Pinned in config; never taken from the quote. */
  intelRoots: readonly X509Certificate[]
  /** The 64 bytes the quote must carry (the caller computes the binding). */
  reportData: Buffer
  minimum: { qeSvn: number; pceSvn: number; teeTcbSvn: Buffer }
  qeVendorId?: Buffer
  mrSeam?: Buffer
  xfam?: Buffer
  tdAttributes?: Buffer
  mrTd?: Buffer
  rtmrs?: Partial<Record<0 | 1 | 2 | 3, Buffer>>
  collateral?: TdxCollateral
  /** Default ['UpToDate']. */
  acceptedTcbStatuses?: readonly string[]
  now?: () => Date
}

export interface TdxVerified {
  quote: TdxQuote
  /** Intel's status for the platform, or 'not evaluated' without collateral. */
  tcbStatus: string
  qeTcbStatus: string
  /** The root that verified the PCK chain is Intel's SGX root CA (not a stand-in). */
  rootIsIntels: boolean
  /** The pinned root the PCK chain ended in. */
  root: X509Certificate
  warnings: string[]
  fmspc?: string
}

export const NOT_EVALUATED = 'not evaluated'
const CONTEXT = 'TDX quote'

export function verifyTdxQuote(raw: Buffer, policy: TdxPolicy): TdxVerified {
  checkPolicyShape(policy)
  const now = (policy.now ?? (() => new Date()))()
  const quote = parseTdxQuote(raw)
  const warnings: string[] = []

  const chain = checkSignatures(quote, policy.intelRoots, now)
  const pck = pckExtensionOf(chain.leaf)

  checkTdFields(quote, policy)
  atLeast('QE ISVSVN', policy.minimum.qeSvn, quote.qeReport.isvSvn)
  atLeast('PCESVN', policy.minimum.pceSvn, pck.pceSvn)

  let tcbStatus = NOT_EVALUATED
  let qeTcbStatus = NOT_EVALUATED
  if (policy.collateral) {
    checkCollateral(policy.collateral, policy.intelRoots, now)
    qeTcbStatus = evaluateQeIdentity(policy.collateral.qeIdentity, quote.qeReport)
    tcbStatus = evaluateTcb(policy.collateral.tcbInfo, pck, quote.body)
    const accepted = policy.acceptedTcbStatuses ?? ['UpToDate']
    if (!accepted.includes(tcbStatus))
      throw new EvidenceMismatchError('TCB status', accepted.join(' or '), tcbStatus, CONTEXT)
    if (!accepted.includes(qeTcbStatus))
      throw new EvidenceMismatchError('QE TCB status', accepted.join(' or '), qeTcbStatus, CONTEXT)
  } else {
    warnings.push(
      'TCB status not evaluated: no Intel collateral (TCB info, QE identity) was given, so a platform with known vulnerabilities would pass',
    )
  }
  if (!chain.rootIsIntels)
    warnings.push("the PCK chain verified against a pinned root that is not Intel's SGX root CA")
  if (quote.trailingBytes > 0)
    warnings.push(`${quote.trailingBytes} bytes after the quote's signature data were ignored`)
  return {
    quote,
    tcbStatus,
    qeTcbStatus,
    rootIsIntels: chain.rootIsIntels,
    root: chain.root,
    warnings,
    fmspc: pck.fmspc,
  }
}

/** The signatures from the attestation key up to a pinned root, and the QE's binding of that key. */
function checkSignatures(quote: TdxQuote, roots: readonly X509Certificate[], now: Date): VerifiedChain {
  const ak = attestationKeyObject(quote.attestationKey)
  if (!p1363Verifies(quote.signedBytes, ak, quote.signature))
    throw new AttestationError(
      `${CONTEXT}: ECDSA signature over header and TD quote body does not verify with the quote's attestation key`,
    )
  const chain = verifyToPinnedRoot(quote.pckChain, roots, now, 'PCK certificate chain')
  if (!p1363Verifies(quote.qeReportRaw, chain.leaf.publicKey, quote.qeReportSignature))
    throw new AttestationError(
      `${CONTEXT}: QE report signature does not verify with the PCK leaf certificate's key`,
    )
  const binding = Buffer.concat([
    createHash('sha256').update(quote.attestationKey).update(quote.qeAuthData).digest(),
    Buffer.alloc(32),
  ])
  if (!binding.equals(quote.qeReport.reportData))
    throw new EvidenceMismatchError(
      'QE report.reportData',
      `${hex(binding)} (SHA-256 of attestation key ‖ QE auth data, zero padded)`,
      hex(quote.qeReport.reportData),
      CONTEXT,
    )
  return chain
}

function checkTdFields(quote: TdxQuote, policy: TdxPolicy): void {
  const body = quote.body
  if (((body.tdAttributes[0] ?? 0) & TD_ATTRIBUTE_DEBUG) !== 0)
    throw new EvidenceMismatchError(
      'TDATTRIBUTES.DEBUG',
      '0 (production TD)',
      `1 (debug TD; TDATTRIBUTES ${hex(body.tdAttributes)})`,
      CONTEXT,
    )
  const same = (field: string, want: Buffer | undefined, found: Buffer) => {
    if (want !== undefined && !want.equals(found))
      throw new EvidenceMismatchError(field, hex(want), hex(found), CONTEXT)
  }
  same('MRTD', policy.mrTd, body.mrTd)
  for (const i of [0, 1, 2, 3] as const) same(`RTMR${i}`, policy.rtmrs?.[i], body.rtmrs[i])
  same('MRSEAM', policy.mrSeam, body.mrSeam)
  same('XFAM', policy.xfam, body.xfam)
  same('TDATTRIBUTES', policy.tdAttributes, body.tdAttributes)
  same('QE vendor ID', policy.qeVendorId, quote.header.qeVendorId)
  const min = policy.minimum.teeTcbSvn
  if (body.teeTcbSvn.some((v, i) => v < (min[i] ?? 0)))
    throw new EvidenceMismatchError(
      'TEE_TCB_SVN',
      `at least ${hex(min)} in every byte`,
      hex(body.teeTcbSvn),
      CONTEXT,
    )
  same('REPORTDATA', policy.reportData, body.reportData)
}

function atLeast(field: string, min: number, found: number): void {
  if (found < min) throw new EvidenceMismatchError(field, `at least ${min}`, String(found), CONTEXT)
}

function checkPolicyShape(policy: TdxPolicy): void {
  const size = (name: string, b: Buffer | undefined, n: number) => {
    if (b !== undefined && b.length !== n)
      throw new AttestationError(`TDX policy: ${name} must be ${n} bytes, got ${b.length}`)
  }
  size('reportData', policy.reportData, REPORT_DATA_SIZE)
  size('minimum.teeTcbSvn', policy.minimum.teeTcbSvn, TEE_TCB_SVN_SIZE)
  if (policy.intelRoots.length === 0)
    throw new AttestationError('TDX policy: no Intel root certificate is pinned')
}

/** The quote's raw P-256 x ‖ y as a key; a point off the curve is refused. */
function attestationKeyObject(raw: Buffer): KeyObject {
  try {
    return createPublicKey({
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: raw.subarray(0, 32).toString('base64url'),
        y: raw.subarray(32, 64).toString('base64url'),
      },
      format: 'jwk',
    })
  } catch (err: unknown) {
    throw new AttestationError(
      `${CONTEXT}: attestation key ${hex(raw)} is not a P-256 point (${err instanceof Error ? err.message : String(err)})`,
    )
  }
}

function p1363Verifies(data: Buffer, key: KeyObject, signature: Buffer): boolean {
  try {
    return verifySignature('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature)
  } catch {
    return false
  }
}
