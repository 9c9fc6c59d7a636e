import { generateKeyPairSync, sign, X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { createTdxStandIn } from '../../../src/lib/cvm-standin/index.js'
import { encodeTdReport, verifyTdxQuote, type TdxPolicy } from '../../../src/lib/attestation/tdx/index.js'
import {
  AT,
  collateralOf,
  expectRefusal,
  flip,
  INTEL_ROOT,
  other,
  withPublicKey,
  type Refusal,
} from './helpers.js'
import { standInFrom, type TdxStandIn } from '../../../src/lib/cvm-standin/tdx.js'

const REPORT_DATA = Buffer.alloc(64, 0x5a)
const MRTD = Buffer.alloc(48, 0x11)
const RTMRS = {
  0: Buffer.alloc(48, 0x20),
  1: Buffer.alloc(48, 0x21),
  2: Buffer.alloc(48, 0x22),
  3: Buffer.alloc(48, 0x23),
}
const OLDER_TEE_TCB_SVN = Buffer.from('02000500000000000000000000000000', 'hex')

describe('TDX quotes of the stand-in Intel', () => {
  let s: TdxStandIn
  let foreign: TdxStandIn
  let quote: Buffer
  let base: TdxPolicy

  before(async () => {
    ;[s, foreign] = await Promise.all([createTdxStandIn(), createTdxStandIn({ fmspc: '112233445566' })])
    quote = s.quote({ reportData: REPORT_DATA, mrTd: MRTD, rtmrs: RTMRS })
    base = {
      intelRoots: [new X509Certificate(s.rootPem)],
      reportData: REPORT_DATA,
      minimum: { qeSvn: s.platform.qeSvn, pceSvn: s.platform.pceSvn, teeTcbSvn: s.platform.teeTcbSvn },
      mrTd: MRTD,
      rtmrs: RTMRS,
      xfam: Buffer.from('e71a060000000000', 'hex'),
      tdAttributes: Buffer.alloc(8),
      collateral: collateralOf(s.collateral()),
    }
  })

  it('verifies with its collateral as UpToDate, and says its root is not Intel’s', () => {
    const v = verifyTdxQuote(quote, base)
    expect(v.tcbStatus).to.equal('UpToDate')
    expect(v.qeTcbStatus).to.equal('UpToDate')
    expect(v.rootIsIntels).to.equal(false)
    expect(v.fmspc).to.equal(s.platform.fmspc)
    expect(v.warnings.join('\n')).to.match(/not Intel's SGX root CA/)
  })

  it('accepts an OutOfDate platform only when the policy accepts that status', () => {
    const older = s.quote({ reportData: REPORT_DATA, mrTd: MRTD, rtmrs: RTMRS, teeTcbSvn: OLDER_TEE_TCB_SVN })
    const policy = { ...base, minimum: { ...base.minimum, teeTcbSvn: Buffer.alloc(16) } }
    expectRefusal(() => verifyTdxQuote(older, policy), { field: 'TCB status' })
    expect(
      verifyTdxQuote(older, { ...policy, acceptedTcbStatuses: ['UpToDate', 'OutOfDate'] }).tcbStatus,
    ).to.equal('OutOfDate')
  })

  it('reports a status Intel gives the level (SWHardeningNeeded) and refuses it by default', () => {
    const collateral = collateralOf(s.collateral({ tcbStatus: 'SWHardeningNeeded' }))
    expectRefusal(() => verifyTdxQuote(quote, { ...base, collateral }), { field: 'TCB status' })
    const v = verifyTdxQuote(quote, {
      ...base,
      collateral,
      acceptedTcbStatuses: ['UpToDate', 'SWHardeningNeeded'],
    })
    expect(v.tcbStatus).to.equal('SWHardeningNeeded')
  })

  it('verifies a quote made from a TD report, as Azure’s IMDS makes it', () => {
    const report = encodeTdReport({ reportData: REPORT_DATA, mrTd: MRTD, teeTcbSvn: s.platform.teeTcbSvn })
    const v = verifyTdxQuote(s.quoteFromTdReport(report), { ...base, rtmrs: undefined, xfam: undefined })
    expect(v.quote.body.mrTd).to.deep.equal(MRTD)
    expect(v.quote.body.reportData).to.deep.equal(REPORT_DATA)
  })

  it('judges a TDX 1.5 platform by its TDX module identity', async () => {
    const s15 = await createTdxStandIn({ teeTcbSvn: Buffer.from('03010500000000000000000000000000', 'hex') })
    const policy = {
      ...base,
      intelRoots: [new X509Certificate(s15.rootPem)],
      minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
      collateral: collateralOf(s15.collateral()),
    }
    const q15 = s15.quote({ reportData: REPORT_DATA, mrTd: MRTD, rtmrs: RTMRS })
    expect(verifyTdxQuote(q15, policy).tcbStatus).to.equal('UpToDate')
    const outdated = { ...policy, collateral: collateralOf(s15.collateral({ moduleStatus: 'OutOfDate' })) }
    expectRefusal(() => verifyTdxQuote(q15, outdated), { field: 'TCB status' })
    expect(
      verifyTdxQuote(q15, { ...outdated, acceptedTcbStatuses: ['UpToDate', 'OutOfDate'] }).tcbStatus,
    ).to.equal('OutOfDate')
    const unknownModule = s15.quote({
      reportData: REPORT_DATA,
      mrTd: MRTD,
      rtmrs: RTMRS,
      teeTcbSvn: Buffer.from('03020500000000000000000000000000', 'hex'),
    })
    expectRefusal(() => verifyTdxQuote(unknownModule, policy), { field: 'TDX module identity' })
  })

  it('with collateral and the stand-in root: one warning, the root; no trailing bytes, no warning of them', () => {
    expect(verifyTdxQuote(quote, base).warnings).to.deep.equal([
      "the PCK chain verified against a pinned root that is not Intel's SGX root CA",
    ])
    expect(verifyTdxQuote(Buffer.concat([quote, Buffer.alloc(3)]), base).warnings).to.deep.equal([
      "the PCK chain verified against a pinned root that is not Intel's SGX root CA",
      "3 bytes after the quote's signature data were ignored",
    ])
  })

  it('a TCB status not accepted names the accepted ones; a QE TCB status not accepted is refused too', () => {
    const outOfDate = { ...base, collateral: collateralOf(s.collateral({ tcbStatus: 'OutOfDate' })) }
    const err = (() => {
      try {
        verifyTdxQuote(quote, { ...outOfDate, acceptedTcbStatuses: ['UpToDate', 'SWHardeningNeeded'] })
      } catch (e) {
        return e as Error
      }
      throw new Error('accepted')
    })()
    expect(err.message).to.equal(
      'TDX quote: TCB status: expected UpToDate or SWHardeningNeeded, found OutOfDate',
    )
    // the rules read the parsed collateral (the signature covers its text): a QE identity whose level is out of date
    const c = collateralOf(s.collateral())
    const qeOutdated = {
      ...c,
      qeIdentity: {
        ...c.qeIdentity,
        tcbLevels: c.qeIdentity.tcbLevels.map((l) => ({ ...l, tcbStatus: 'OutOfDate' })),
      },
    }
    expectRefusal(() => verifyTdxQuote(quote, { ...base, collateral: qeOutdated }), {
      field: 'QE TCB status',
    })
    expect(() =>
      verifyTdxQuote(quote, {
        ...base,
        collateral: qeOutdated,
        acceptedTcbStatuses: ['UpToDate', 'SWHardeningNeeded'],
      }),
    ).to.throw('TDX quote: QE TCB status: expected UpToDate or SWHardeningNeeded, found OutOfDate')
    expect(
      verifyTdxQuote(quote, {
        ...base,
        collateral: qeOutdated,
        acceptedTcbStatuses: ['UpToDate', 'OutOfDate'],
      }).qeTcbStatus,
    ).to.equal('OutOfDate')
  })

  it('the refusals of the quote name what they expected, in their words', () => {
    const messageOf = (fn: () => unknown): string => {
      try {
        fn()
      } catch (e) {
        return (e as Error).message
      }
      throw new Error('accepted')
    }
    const c = collateralOf(s.collateral())
    const qeOutdated = {
      ...c,
      qeIdentity: {
        ...c.qeIdentity,
        tcbLevels: c.qeIdentity.tcbLevels.map((l) => ({ ...l, tcbStatus: 'OutOfDate' })),
      },
    }
    expect(messageOf(() => verifyTdxQuote(quote, { ...base, collateral: qeOutdated }))).to.equal(
      'TDX quote: QE TCB status: expected UpToDate, found OutOfDate',
    )
    expect(messageOf(() => verifyTdxQuote(quote, { ...base, intelRoots: [INTEL_ROOT] }))).to.match(
      /^PCK certificate chain: .* chains to none of the 1 pinned roots/,
    )
    const resigned = flip(quote, AT.qeReport + 320)
    sign('sha256', resigned.subarray(AT.qeReport, AT.qeReport + 384), {
      key: s.keys.pck,
      dsaEncoding: 'ieee-p1363',
    }).copy(resigned, AT.qeReportSignature)
    expect(messageOf(() => verifyTdxQuote(resigned, base))).to.match(
      /^TDX quote: QE report\.reportData: expected [0-9a-f]{128} \(SHA-256 of attestation key ‖ QE auth data, zero padded\), found [0-9a-f]{128}$/,
    )
    const debug = s.quote({
      reportData: REPORT_DATA,
      mrTd: MRTD,
      rtmrs: RTMRS,
      tdAttributes: Buffer.from('0100000000000000', 'hex'),
    })
    expect(messageOf(() => verifyTdxQuote(debug, { ...base, tdAttributes: undefined }))).to.equal(
      'TDX quote: TDATTRIBUTES.DEBUG: expected 0 (production TD), found 1 (debug TD; TDATTRIBUTES 0100000000000000)',
    )
    const older = s.quote({ reportData: REPORT_DATA, mrTd: MRTD, rtmrs: RTMRS, teeTcbSvn: OLDER_TEE_TCB_SVN })
    expect(messageOf(() => verifyTdxQuote(older, base))).to.equal(
      `TDX quote: TEE_TCB_SVN: expected at least ${base.minimum.teeTcbSvn.toString('hex')} in every byte, found ${OLDER_TEE_TCB_SVN.toString('hex')}`,
    )
    expect(
      messageOf(() => verifyTdxQuote(quote, { ...base, minimum: { ...base.minimum, qeSvn: 99 } })),
    ).to.equal(`TDX quote: QE ISVSVN: expected at least 99, found ${s.platform.qeSvn}`)
  })

  it('a policy of the wrong shape is refused before the quote is read', () => {
    expectRefusal(() => verifyTdxQuote(quote, { ...base, reportData: Buffer.alloc(63) }), {
      message: /^TDX policy: reportData must be 64 bytes, got 63$/,
    })
    expectRefusal(
      () => verifyTdxQuote(quote, { ...base, minimum: { ...base.minimum, teeTcbSvn: Buffer.alloc(15) } }),
      { message: /^TDX policy: minimum.teeTcbSvn must be 16 bytes, got 15$/ },
    )
    expectRefusal(() => verifyTdxQuote(quote, { ...base, intelRoots: [] }), {
      message: /^TDX policy: no Intel root certificate is pinned$/,
    })
    expectRefusal(() => verifyTdxQuote(Buffer.alloc(10), { ...base, reportData: Buffer.alloc(65) }), {
      message: /^TDX policy: reportData must be 64 bytes, got 65$/,
    })
  })

  it('a PCK certificate with an Ed25519 key (the QE report check cannot even run): refused by that check', () => {
    // the PCK CA certifies an Ed25519 key; the QE report is still signed by the stand-in's P-256 PCK key
    const ed25519 = generateKeyPairSync('ed25519').publicKey
    const pck = withPublicKey(s.certificates.pck, ed25519, s.keys.pckCa)
    expect(new X509Certificate(pck).publicKey.asymmetricKeyType).to.equal('ed25519')
    const odd = standInFrom(s.keys, { ...s.certificates, pck }, s.platform)
    const raw = odd.quote({ reportData: REPORT_DATA, mrTd: MRTD, rtmrs: RTMRS })
    // the same stand-in with its own PCK certificate passes, so only the key type differs
    expect(verifyTdxQuote(quote, base).tcbStatus).to.equal('UpToDate')
    expectRefusal(() => verifyTdxQuote(raw, base), {
      message: /^TDX quote: QE report signature does not verify with the PCK leaf certificate's key$/,
    })
  })

  it('an attestation key that is not a P-256 point: refused, naming the key', () => {
    const bad = Buffer.from(quote)
    bad.fill(0xff, AT.attestationKey, AT.attestationKey + 64)
    expectRefusal(() => verifyTdxQuote(bad, base), {
      message: new RegExp(`^TDX quote: attestation key ${'ff'.repeat(64)} is not a P-256 point \\(`),
    })
  })

  const cases: Record<string, { raw?: () => Buffer; policy?: () => Partial<TdxPolicy>; want: Refusal }> = {
    'a byte of the signed body changed': {
      raw: () => flip(quote, AT.mrOwner),
      want: { message: /ECDSA signature over header/ },
    },
    'a byte of the attestation key signature changed': {
      raw: () => flip(quote, AT.signature + 9),
      want: { message: /ECDSA signature over header/ },
    },
    'a byte of the QE report changed': {
      raw: () => flip(quote, AT.qeReport + 17),
      want: { message: /QE report signature/ },
    },
    'QE report data not binding the attestation key (re-signed with the PCK key)': {
      raw: () => {
        const out = flip(quote, AT.qeReport + 320)
        const report = out.subarray(AT.qeReport, AT.qeReport + 384)
        sign('sha256', report, { key: s.keys.pck, dsaEncoding: 'ieee-p1363' }).copy(out, AT.qeReportSignature)
        return out
      },
      want: { field: 'QE report.reportData' },
    },
    'Intel’s root pinned instead of the stand-in’s': {
      policy: () => ({ intelRoots: [INTEL_ROOT] }),
      want: { message: /chains to none/ },
    },
    'another stand-in’s root pinned': {
      policy: () => ({ intelRoots: [new X509Certificate(foreign.rootPem)] }),
      want: { message: /chains to none/ },
    },
    'the debug TD attribute': {
      raw: () =>
        s.quote({
          reportData: REPORT_DATA,
          mrTd: MRTD,
          rtmrs: RTMRS,
          tdAttributes: Buffer.from('0100000000000000', 'hex'),
        }),
      policy: () => ({ tdAttributes: undefined }),
      want: { field: 'TDATTRIBUTES.DEBUG' },
    },
    'MRTD mismatched': { policy: () => ({ mrTd: other(MRTD) }), want: { field: 'MRTD' } },
    'RTMR2 mismatched': {
      policy: () => ({ rtmrs: { ...RTMRS, 2: other(RTMRS[2]) } }),
      want: { field: 'RTMR2' },
    },
    'MRSEAM mismatched': { policy: () => ({ mrSeam: Buffer.alloc(48) }), want: { field: 'MRSEAM' } },
    'XFAM mismatched': { policy: () => ({ xfam: Buffer.alloc(8) }), want: { field: 'XFAM' } },
    'TEE_TCB_SVN below the minimum': {
      raw: () => s.quote({ reportData: REPORT_DATA, mrTd: MRTD, rtmrs: RTMRS, teeTcbSvn: OLDER_TEE_TCB_SVN }),
      want: { field: 'TEE_TCB_SVN' },
    },
    'QE SVN below the minimum': {
      policy: () => ({ minimum: { ...base.minimum, qeSvn: 5 } }),
      want: { field: 'QE ISVSVN' },
    },
    'PCESVN below the minimum': {
      policy: () => ({ minimum: { ...base.minimum, pceSvn: 12 } }),
      want: { field: 'PCESVN' },
    },
    'wrong REPORT_DATA': {
      policy: () => ({ reportData: other(REPORT_DATA) }),
      want: { field: 'REPORTDATA' },
    },
    'tampered TCB info': {
      policy: () => {
        const files = s.collateral()
        return {
          collateral: collateralOf({
            ...files,
            tcbInfo: files.tcbInfo.replace('"pcesvn":11', '"pcesvn":10'),
          }),
        }
      },
      want: { message: /signature of "tcbInfo" does not verify/ },
    },
    'expired collateral': {
      policy: () => ({
        collateral: collateralOf(s.collateral({ nextUpdate: new Date(Date.now() - 60_000) })),
      }),
      want: { field: 'tcbInfo.nextUpdate' },
    },
    'collateral of another platform (FMSPC)': {
      policy: () => ({
        intelRoots: [new X509Certificate(s.rootPem), new X509Certificate(foreign.rootPem)],
        collateral: collateralOf(foreign.collateral()),
      }),
      want: { field: 'FMSPC' },
    },
    'collateral signed under a root that is not pinned': {
      policy: () => ({ collateral: collateralOf(foreign.collateral()) }),
      want: { message: /tcbInfo issuer chain: .*chains to none/ },
    },
    'TCB status OutOfDate, not accepted': {
      policy: () => ({ collateral: collateralOf(s.collateral({ tcbStatus: 'OutOfDate' })) }),
      want: { field: 'TCB status' },
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`is refused after: ${name}`, () => {
      expectRefusal(() => verifyTdxQuote(tc.raw?.() ?? quote, { ...base, ...tc.policy?.() }), tc.want)
    })
})
