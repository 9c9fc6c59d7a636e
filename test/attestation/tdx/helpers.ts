/** Shared by the TDX tests: the recorded fixtures, offsets into a quote v4, refusal assertions. */
import { X509Certificate, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from '../../support/chai.js'
import { INTEL_SGX_ROOT_CA } from '../../../src/lib/attestation/index.js'
import { EvidenceMismatchError } from '../../../src/lib/attestation/errors.js'
import {
  parseTdxCollateral,
  parseTdxQuote,
  type TdxCollateralFiles,
  type TdxPolicy,
} from '../../../src/lib/attestation/tdx/index.js'
import { parseCertificate, signCertificate, toPem } from '../../../src/lib/x509/index.js'

export const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/cvm/tdx')
export const fixture = (name: string): Buffer => readFileSync(path.join(FIXTURES, name))

export const RECORDED_QUOTE = fixture('tdx_prod_quote_SPR_E4.dat')
export const RECORDED_COLLATERAL: TdxCollateralFiles = {
  tcbInfo: fixture('sample_tcbInfo_response').toString('utf8'),
  tcbInfoIssuerChain: fixture('tcb_info_issuer_chain.pem').toString('utf8'),
  qeIdentity: fixture('sample_qeIdentity_response').toString('utf8'),
  qeIdentityIssuerChain: fixture('qe_identity_issuer_chain.pem').toString('utf8'),
}
export const AZURE_TD_REPORT = fixture('azure_hcl_td_report.bin')
export const INTEL_ROOT = new X509Certificate(INTEL_SGX_ROOT_CA)
/** Inside the validity of the recorded PCK chain, the TCB signing certificate and the collateral. */
export const RECORDED_NOW = new Date('2023-07-01T00:00:00Z')

/** Offsets into a quote v4 with QE report certification data. */
export const AT = {
  body: 48,
  tdAttributes: 48 + 120,
  mrTd: 48 + 136,
  mrOwner: 48 + 232,
  reportData: 48 + 520,
  signature: 636,
  attestationKey: 700,
  qeReport: 770,
  qeReportSignature: 770 + 384,
} as const

/** A policy every field of which is taken from the quote itself (it must pass). */
export function policyOf(raw: Buffer, roots: readonly X509Certificate[], now: Date): TdxPolicy {
  const q = parseTdxQuote(raw)
  return {
    intelRoots: roots,
    reportData: q.body.reportData,
    minimum: { qeSvn: q.qeReport.isvSvn, pceSvn: 0, teeTcbSvn: q.body.teeTcbSvn },
    qeVendorId: q.header.qeVendorId,
    mrSeam: q.body.mrSeam,
    xfam: q.body.xfam,
    tdAttributes: q.body.tdAttributes,
    mrTd: q.body.mrTd,
    rtmrs: { 0: q.body.rtmrs[0], 1: q.body.rtmrs[1], 2: q.body.rtmrs[2], 3: q.body.rtmrs[3] },
    now: () => now,
  }
}

export const collateralOf = (files: TdxCollateralFiles) => parseTdxCollateral(files)

/**
 * The certificate (PEM) with another public key: the same names, validity and extensions, signed
 * again by its issuer's key.
 */
export function withPublicKey(pem: string, publicKey: KeyObject, issuerKey: KeyObject): string {
  const tbs = parseCertificate(pem).tbsCertificate
  return toPem(
    signCertificate(
      {
        serialNumber: Buffer.from(tbs.serialNumber),
        subject: tbs.subject,
        issuer: tbs.issuer,
        notBefore: tbs.validity.notBefore.getTime(),
        notAfter: tbs.validity.notAfter.getTime(),
        publicKey,
        extensions: (tbs.extensions ?? []).map((e) => ({
          oid: e.extnID,
          critical: e.critical,
          value: new Uint8Array(e.extnValue.buffer),
        })),
      },
      issuerKey,
    ),
  )
}

/** One byte XOR 0x01 at `offset`. */
export function flip(raw: Buffer, offset: number, mask = 0x01): Buffer {
  const out = Buffer.from(raw)
  out[offset] = (out[offset] ?? 0) ^ mask
  return out
}

export const other = (b: Buffer): Buffer => Buffer.from(b.map((x) => x ^ 0xff))

/** What a case expects: an EvidenceMismatchError on `field`, or an AttestationError whose message matches. */
export type Refusal = { field: string } | { message: RegExp }

export function expectRefusal(fn: () => unknown, want: Refusal): void {
  let thrown: unknown
  try {
    fn()
  } catch (err: unknown) {
    thrown = err
  }
  expect(thrown, 'expected a refusal').to.be.instanceOf(Error)
  expect((thrown as Error).name, (thrown as Error).message).to.be.oneOf([
    'AttestationError',
    'EvidenceMismatchError',
  ])
  if ('field' in want) {
    expect(thrown, (thrown as Error).message).to.be.instanceOf(EvidenceMismatchError)
    expect((thrown as EvidenceMismatchError).field).to.equal(want.field)
  } else {
    expect(thrown).to.not.be.instanceOf(EvidenceMismatchError)
    expect((thrown as Error).message).to.match(want.message)
  }
}
