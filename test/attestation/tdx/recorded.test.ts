import { X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { createTdxStandIn } from '../../../src/lib/cvm-standin/index.js'
import { parseTdxQuote, verifyTdxQuote, type TdxPolicy } from '../../../src/lib/attestation/tdx/index.js'
import {
  AT,
  collateralOf,
  expectRefusal,
  flip,
  INTEL_ROOT,
  other,
  policyOf,
  RECORDED_COLLATERAL,
  RECORDED_NOW,
  RECORDED_QUOTE,
  type Refusal,
} from './helpers.js'

/** Replaces the first occurrence of `from` in one collateral file. */
const tamper = (key: keyof typeof RECORDED_COLLATERAL, from: string, to: string) => {
  expect(RECORDED_COLLATERAL[key]).to.include(from)
  return collateralOf({ ...RECORDED_COLLATERAL, [key]: RECORDED_COLLATERAL[key].replace(from, to) })
}

describe('TDX quote recorded on a Sapphire Rapids machine (go-tdx-guest)', () => {
  const base = policyOf(RECORDED_QUOTE, [INTEL_ROOT], RECORDED_NOW)
  const q = parseTdxQuote(RECORDED_QUOTE)
  let standInRoot: X509Certificate

  before(async () => {
    standInRoot = new X509Certificate((await createTdxStandIn()).rootPem)
  })

  it("verifies against Intel's real root, its policy taken from its own values", () => {
    const v = verifyTdxQuote(RECORDED_QUOTE, { ...base, minimum: { ...base.minimum, pceSvn: 11 } })
    expect(v.rootIsIntels).to.equal(true)
    expect(v.tcbStatus).to.equal('not evaluated')
    expect(v.qeTcbStatus).to.equal('not evaluated')
    expect(v.fmspc).to.equal('50806f000000')
    expect(v.warnings).to.deep.equal([
      'TCB status not evaluated: no Intel collateral (TCB info, QE identity) was given, so a platform with known vulnerabilities would pass',
      "39 bytes after the quote's signature data were ignored",
    ])
    expect(v.quote.body.mrTd.toString('hex')).to.equal(
      '6363b8043668a3ad953278e10389574d326c6749fb78aa810ecd9336923db86f22fc00b8dcd404bc10d5e119d7215cbb',
    )
  })

  it('has collateral that Intel signed and that matches its FMSPC and QE, but no TCB level for its platform', () => {
    // README.md beside the fixtures: the sample levels need SGX components 05 05 … and TDX 03 00 05 …
    expectRefusal(
      () => verifyTdxQuote(RECORDED_QUOTE, { ...base, collateral: collateralOf(RECORDED_COLLATERAL) }),
      {
        field: 'TCB level',
      },
    )
  })

  const cases: Record<string, { raw?: Buffer; policy?: Partial<TdxPolicy>; want: Refusal }> = {
    'a byte of the signed body changed': {
      raw: flip(RECORDED_QUOTE, AT.mrOwner),
      want: { message: /ECDSA signature over header/ },
    },
    'the debug bit set in the signed body': {
      raw: flip(RECORDED_QUOTE, AT.tdAttributes),
      want: { message: /ECDSA signature over header/ },
    },
    'a byte of the attestation key signature changed': {
      raw: flip(RECORDED_QUOTE, AT.signature + 5),
      want: { message: /ECDSA signature over header/ },
    },
    'a byte of the QE report changed': {
      raw: flip(RECORDED_QUOTE, AT.qeReport + 300),
      want: { message: /QE report signature/ },
    },
    'a byte of the QE report signature changed': {
      raw: flip(RECORDED_QUOTE, AT.qeReportSignature + 1),
      want: { message: /QE report signature/ },
    },
    'a foreign root pinned instead of Intel’s': {
      policy: { intelRoots: [] },
      want: { message: /chains to none/ },
    },
    'the PCK chain checked after it expired': {
      policy: { now: () => new Date('2030-01-01T00:00:00Z') },
      want: { message: /expired/ },
    },
    'MRTD mismatched': { policy: { mrTd: other(q.body.mrTd) }, want: { field: 'MRTD' } },
    'RTMR0 mismatched': { policy: { rtmrs: { 0: other(q.body.rtmrs[0]) } }, want: { field: 'RTMR0' } },
    'RTMR1 mismatched': { policy: { rtmrs: { 1: other(q.body.rtmrs[1]) } }, want: { field: 'RTMR1' } },
    'RTMR2 mismatched': { policy: { rtmrs: { 2: other(q.body.rtmrs[2]) } }, want: { field: 'RTMR2' } },
    'RTMR3 mismatched': { policy: { rtmrs: { 3: other(q.body.rtmrs[3]) } }, want: { field: 'RTMR3' } },
    'MRSEAM mismatched': { policy: { mrSeam: other(q.body.mrSeam) }, want: { field: 'MRSEAM' } },
    'XFAM mismatched': { policy: { xfam: other(q.body.xfam) }, want: { field: 'XFAM' } },
    'TD attributes mismatched': {
      policy: { tdAttributes: Buffer.alloc(8) },
      want: { field: 'TDATTRIBUTES' },
    },
    'QE vendor ID mismatched': { policy: { qeVendorId: Buffer.alloc(16) }, want: { field: 'QE vendor ID' } },
    'TEE_TCB_SVN below the minimum': {
      policy: {
        minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.from('03000500000000000000000000000000', 'hex') },
      },
      want: { field: 'TEE_TCB_SVN' },
    },
    'QE SVN below the minimum': {
      policy: { minimum: { qeSvn: 5, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) } },
      want: { field: 'QE ISVSVN' },
    },
    'PCESVN below the minimum': {
      policy: { minimum: { qeSvn: 0, pceSvn: 12, teeTcbSvn: Buffer.alloc(16) } },
      want: { field: 'PCESVN' },
    },
    'wrong REPORT_DATA': { policy: { reportData: other(q.body.reportData) }, want: { field: 'REPORTDATA' } },
    'TCB info tampered': {
      policy: {
        collateral: tamper('tcbInfo', '"tcbEvaluationDataNumber":15', '"tcbEvaluationDataNumber":16'),
      },
      want: { message: /signature of "tcbInfo" does not verify/ },
    },
    'QE identity tampered': {
      policy: { collateral: tamper('qeIdentity', '"isvsvn":4', '"isvsvn":3') },
      want: { message: /signature of "enclaveIdentity" does not verify/ },
    },
    'collateral expired': {
      policy: { collateral: collateralOf(RECORDED_COLLATERAL), now: () => new Date('2024-01-01T00:00:00Z') },
      want: { field: 'tcbInfo.nextUpdate' },
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`is refused after: ${name}`, () => {
      const policy = { ...base, ...tc.policy }
      if (tc.policy?.intelRoots) policy.intelRoots = [standInRoot]
      expectRefusal(() => verifyTdxQuote(tc.raw ?? RECORDED_QUOTE, policy), tc.want)
    })
})
