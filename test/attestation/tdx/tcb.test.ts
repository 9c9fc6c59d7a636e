/**
 * Intel's TCB rules one at a time, on the stand-in's collateral (parsed, then changed field by field:
 * the signatures cover the JSON text, the rules read the parsed objects): which TCB level a platform
 * gets, how a TDX 1.5 module's identity changes it, the QE identity's checks, and the collateral's
 * ids, versions and dates. Each refusal names its field.
 */
import { generateKeyPairSync, X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { AttestationError, EvidenceMismatchError } from '../../../src/lib/attestation/errors.js'
import {
  parseTdxQuote,
  pckExtensionOf,
  type PckExtension,
  type TdQuoteBody,
  type SgxReportBody,
  type TdxCollateral,
  type TdxTcbInfo,
  type TdxTcbLevel,
} from '../../../src/lib/attestation/tdx/index.js'
import { checkCollateral, evaluateQeIdentity, evaluateTcb } from '../../../src/lib/attestation/tdx/tcb.js'
import { createTdxStandIn, type TdxStandIn } from '../../../src/lib/cvm-standin/tdx.js'
import { collateralOf, withPublicKey } from './helpers.js'

function mismatch(fn: () => unknown): EvidenceMismatchError {
  try {
    fn()
  } catch (err) {
    expect(err, (err as Error).message).to.be.instanceOf(EvidenceMismatchError)
    return err as EvidenceMismatchError
  }
  throw new Error('expected a refusal, but it was accepted')
}

/** The context an EvidenceMismatchError's message starts with. */
const contextOf = (e: Error) => e.message.slice(0, e.message.indexOf(': '))

describe('TDX TCB evaluation and collateral rules', function () {
  this.timeout(20_000)
  let s: TdxStandIn
  let collateral: TdxCollateral
  let pck: PckExtension
  let body: TdQuoteBody
  let qe: SgxReportBody
  let roots: X509Certificate[]
  const now = () => new Date()
  before(async () => {
    s = await createTdxStandIn()
    collateral = collateralOf(s.collateral())
    pck = pckExtensionOf(new X509Certificate(s.certificates.pck))
    const q = parseTdxQuote(s.quote({ reportData: Buffer.alloc(64) }))
    body = q.body
    qe = q.qeReport
    roots = [new X509Certificate(s.rootPem)]
  })
  const level = (l: Partial<TdxTcbLevel>): TdxTcbLevel => ({
    sgxTcbComponents: pck.tcbComponents,
    pceSvn: pck.pceSvn,
    tdxTcbComponents: [...body.teeTcbSvn],
    tcbDate: '2024-01-01T00:00:00Z',
    tcbStatus: 'UpToDate',
    advisoryIds: [],
    ...l,
  })
  const info = (i: Partial<TdxTcbInfo>): TdxTcbInfo => ({ ...collateral.tcbInfo, ...i })
  const svn = (bytes: number[]) => {
    const out = Buffer.alloc(16)
    bytes.forEach((b, i) => (out[i] = b))
    return out
  }

  describe('evaluateTcb', () => {
    it("the stand-in's own collateral: UpToDate", () => {
      expect(evaluateTcb(collateral.tcbInfo, pck, body)).to.equal('UpToDate')
    })

    it('collateral of another platform: FMSPC, then PCEID, named with both values', () => {
      const f = mismatch(() => evaluateTcb(info({ fmspc: '00aabbccddee' }), pck, body))
      expect([f.field, f.expected, f.found, contextOf(f)]).to.deep.equal([
        'FMSPC',
        '00aabbccddee',
        pck.fmspc,
        'PCK certificate vs tcbInfo',
      ])
      const p = mismatch(() => evaluateTcb(info({ pceId: 'ffff' }), pck, body))
      expect([p.field, p.expected, p.found]).to.deep.equal(['PCEID', 'ffff', pck.pceId])
      expect(contextOf(p)).to.equal('PCK certificate vs tcbInfo')
    })

    it('the TDX module: MRSIGNERSEAM must match; SEAMATTRIBUTES only under the mask; no module section, no check', () => {
      const module = {
        mrSigner: body.mrSignerSeam,
        attributes: Buffer.alloc(8),
        attributesMask: Buffer.alloc(8),
      }
      const other = Buffer.from(body.mrSignerSeam.map((b) => b ^ 0xff))
      const signer = mismatch(() =>
        evaluateTcb(info({ tdxModule: { ...module, mrSigner: other } }), pck, body),
      )
      expect([signer.field, contextOf(signer)]).to.deep.equal(['MRSIGNERSEAM', 'tcbInfo.tdxModule'])
      const seam = Buffer.from(body.seamAttributes)
      // attributes the mask leaves out may differ
      const masked = {
        ...module,
        attributes: Buffer.alloc(seam.length),
        attributesMask: Buffer.alloc(seam.length),
      }
      expect(
        evaluateTcb(info({ tdxModule: masked }), pck, {
          ...body,
          seamAttributes: Buffer.alloc(seam.length, 0xff),
        }),
      ).to.equal('UpToDate')
      // a bit under the mask must match
      const strict = {
        ...module,
        attributes: Buffer.alloc(seam.length),
        attributesMask: Buffer.alloc(seam.length, 0xff),
      }
      const err = mismatch(() =>
        evaluateTcb(info({ tdxModule: strict }), pck, {
          ...body,
          seamAttributes: Buffer.alloc(seam.length, 0x01),
        }),
      )
      expect([err.field, err.found, contextOf(err)]).to.deep.equal([
        'SEAMATTRIBUTES (masked)',
        '01'.repeat(seam.length),
        'tcbInfo.tdxModule',
      ])
      expect(
        evaluateTcb(info({ tdxModule: undefined }), pck, {
          ...body,
          mrSignerSeam: other,
          seamAttributes: Buffer.alloc(seam.length, 0xff),
        }),
      ).to.equal('UpToDate')
    })

    it('the first level the platform meets in all three (SGX components, PCESVN, TDX components) gives the status', () => {
      const sgxAbove = pck.tcbComponents.map((v, i) => (i === 3 ? v + 1 : v))
      const tdxAbove = [...body.teeTcbSvn].map((v, i) => (i === 2 ? v + 1 : v))
      const levels = (first: Partial<TdxTcbLevel>) => [
        level({ ...first, tcbStatus: 'UpToDate' }),
        level({ tcbStatus: 'OutOfDate' }),
      ]
      expect(evaluateTcb(info({ tcbLevels: levels({ sgxTcbComponents: sgxAbove }) }), pck, body)).to.equal(
        'OutOfDate',
      )
      expect(evaluateTcb(info({ tcbLevels: levels({ pceSvn: pck.pceSvn + 1 }) }), pck, body)).to.equal(
        'OutOfDate',
      )
      expect(evaluateTcb(info({ tcbLevels: levels({ tdxTcbComponents: tdxAbove }) }), pck, body)).to.equal(
        'OutOfDate',
      )
      // a level listing fewer SGX components than the certificate holds: the missing ones are 0
      expect(
        evaluateTcb(
          info({ tcbLevels: [level({ sgxTcbComponents: pck.tcbComponents.slice(0, 2) })] }),
          pck,
          body,
        ),
      ).to.equal('UpToDate')
      const none = mismatch(() =>
        evaluateTcb(info({ tcbLevels: [level({ pceSvn: pck.pceSvn + 1 })] }), pck, body),
      )
      expect([none.field, contextOf(none)]).to.deep.equal(['TCB level', 'TDX TCB evaluation'])
      expect(none.expected).to.match(
        /^one of the 1 levels of tcbInfo \(fmspc [0-9a-f]{12}\) at or below the platform$/,
      )
      expect(none.found).to.match(
        new RegExp(
          `^none: PCK SGX TCB components [0-9a-f]{32}, PCESVN ${pck.pceSvn}, TEE_TCB_SVN [0-9a-f]{32}$`,
        ),
      )
    })

    describe('a TDX 1.5 module (TEE_TCB_SVN[1] > 0)', () => {
      const module15 = (tcbLevels: { isvSvn: number; tcbStatus: string }[], id = 'TDX_0A') => ({
        id,
        mrSigner: Buffer.alloc(48),
        attributes: Buffer.alloc(8),
        attributesMask: Buffer.alloc(8),
        tcbLevels,
      })
      const body15 = (isv: number) => ({ ...body, teeTcbSvn: svn([isv, 0x0a, 5]) })
      // the level asks more of components 0 and 1 than the quote has: a 1.5 module is judged by its identity instead
      const levels15 = () => [level({ tdxTcbComponents: [9, 9, 5], tcbStatus: 'UpToDate' })]

      it('is judged by its module identity (id TDX_<hex of byte 1>, upper case), not by components 0 and 1', () => {
        const i = info({
          tcbLevels: levels15(),
          tdxModuleIdentities: [module15([{ isvSvn: 3, tcbStatus: 'UpToDate' }])],
        })
        expect(evaluateTcb(i, pck, body15(3))).to.equal('UpToDate')
        const lower = info({
          tcbLevels: levels15(),
          tdxModuleIdentities: [module15([{ isvSvn: 3, tcbStatus: 'UpToDate' }], 'tdx_0a')],
        })
        expect(evaluateTcb(lower, pck, body15(3))).to.equal('UpToDate')
      })

      it("the module's first level at or below its ISVSVN; none, or no identity: refused, naming it", () => {
        const i = info({
          tcbLevels: levels15(),
          tdxModuleIdentities: [
            module15([
              { isvSvn: 5, tcbStatus: 'UpToDate' },
              { isvSvn: 2, tcbStatus: 'OutOfDate' },
            ]),
          ],
        })
        expect(evaluateTcb(i, pck, body15(3))).to.equal('OutOfDate')
        expect(evaluateTcb(i, pck, body15(5))).to.equal('UpToDate')
        const low = mismatch(() => evaluateTcb(i, pck, body15(1)))
        expect([low.field, low.expected, low.found]).to.deep.equal([
          'TDX_0A TCB level',
          'ISVSVN at or below 1',
          'none',
        ])
        expect(contextOf(low)).to.equal('TDX TCB evaluation')
        const missing = mismatch(() =>
          evaluateTcb(
            info({
              tcbLevels: levels15(),
              tdxModuleIdentities: [module15([], 'TDX_01'), module15([], 'TDX_02')],
            }),
            pck,
            body15(3),
          ),
        )
        expect([missing.field, missing.expected, missing.found]).to.deep.equal([
          'TDX module identity',
          'TDX_0A',
          'none in tcbInfo.tdxModuleIdentities (TDX_01, TDX_02)',
        ])
        expect(contextOf(missing)).to.equal('TDX TCB evaluation')
        const empty = mismatch(() =>
          evaluateTcb(info({ tcbLevels: levels15(), tdxModuleIdentities: [] }), pck, body15(3)),
        )
        expect(empty.found).to.equal('none in tcbInfo.tdxModuleIdentities (empty)')
      })

      it("an out-of-date module makes the platform out of date, keeping its configuration need; any other module status is the platform's", () => {
        const withModule = (platform: string, module: string) =>
          evaluateTcb(
            info({
              tcbLevels: [level({ tdxTcbComponents: [0, 0, 5], tcbStatus: platform })],
              tdxModuleIdentities: [module15([{ isvSvn: 0, tcbStatus: module }])],
            }),
            pck,
            body15(3),
          )
        expect(withModule('ConfigurationNeeded', 'UpToDate')).to.equal('ConfigurationNeeded')
        expect(withModule('UpToDate', 'OutOfDate')).to.equal('OutOfDate')
        expect(withModule('ConfigurationNeeded', 'OutOfDate')).to.equal('OutOfDateConfigurationNeeded')
        expect(withModule('SWHardeningNeeded', 'OutOfDate')).to.equal('OutOfDate')
        expect(withModule('UpToDate', 'Revoked')).to.equal('Revoked')
      })
    })
  })

  describe('evaluateQeIdentity', () => {
    const identity = () => collateral.qeIdentity
    it("the stand-in's QE: its identity's status", () => {
      expect(evaluateQeIdentity(identity(), qe)).to.equal('UpToDate')
    })

    it('MRSIGNER, ISVPRODID, MISCSELECT and ATTRIBUTES under their masks: each refused by name', () => {
      const flipped = (b: Buffer) => Buffer.from(b.map((x) => x ^ 0xff))
      const field = (fn: () => unknown) => mismatch(fn)
      const m = field(() => evaluateQeIdentity({ ...identity(), mrSigner: flipped(qe.mrSigner) }, qe))
      expect([m.field, contextOf(m)]).to.deep.equal(['QE MRSIGNER', 'QE report vs QE identity'])
      const p = field(() => evaluateQeIdentity({ ...identity(), isvProdId: qe.isvProdId + 1 }, qe))
      expect([p.field, p.expected, p.found]).to.deep.equal([
        'QE ISVPRODID',
        String(qe.isvProdId + 1),
        String(qe.isvProdId),
      ])
      const misc = Buffer.alloc(4)
      misc.writeUInt32LE(1)
      const ms = field(() =>
        evaluateQeIdentity(
          { ...identity(), miscSelect: misc, miscSelectMask: Buffer.alloc(4, 0xff) },
          { ...qe, miscSelect: 2 },
        ),
      )
      expect([ms.field, ms.expected, ms.found]).to.deep.equal([
        'QE MISCSELECT (masked)',
        '01000000',
        '02000000',
      ])
      // outside the mask, MISCSELECT and ATTRIBUTES may differ
      expect(
        evaluateQeIdentity(
          {
            ...identity(),
            miscSelect: Buffer.alloc(4),
            miscSelectMask: Buffer.alloc(4),
            attributesMask: Buffer.alloc(16),
            attributes: Buffer.alloc(16),
          },
          { ...qe, miscSelect: 0xffffffff, attributes: Buffer.alloc(16, 0xff) },
        ),
      ).to.equal('UpToDate')
      const a = field(() =>
        evaluateQeIdentity(
          { ...identity(), attributes: Buffer.alloc(16), attributesMask: Buffer.alloc(16, 0xff) },
          { ...qe, attributes: Buffer.alloc(16, 0x01) },
        ),
      )
      expect([a.field, a.found]).to.deep.equal(['QE ATTRIBUTES (masked)', '01'.repeat(16)])
    })

    it("the identity's first level at or below the QE's ISVSVN; none: refused", () => {
      const levels = [
        { isvSvn: qe.isvSvn + 1, tcbStatus: 'UpToDate' },
        { isvSvn: qe.isvSvn, tcbStatus: 'OutOfDate' },
      ]
      expect(evaluateQeIdentity({ ...identity(), tcbLevels: levels }, qe)).to.equal('OutOfDate')
      const none = mismatch(() => evaluateQeIdentity({ ...identity(), tcbLevels: levels.slice(0, 1) }, qe))
      expect([none.field, none.expected, none.found]).to.deep.equal([
        'QE TCB level',
        `ISVSVN at or below ${qe.isvSvn}`,
        'none in enclaveIdentity.tcbLevels',
      ])
    })
  })

  describe('checkCollateral', () => {
    it("the stand-in's collateral passes; each id and version is checked by name", () => {
      checkCollateral(collateral, roots, now())
      const field = (c: Partial<TdxCollateral>) => {
        const e = mismatch(() => checkCollateral({ ...collateral, ...c }, roots, now()))
        return [e.field, e.expected, e.found, contextOf(e)]
      }
      expect(field({ tcbInfo: { ...collateral.tcbInfo, id: 'SGX' } })).to.deep.equal([
        'tcbInfo.id',
        'TDX',
        'SGX',
        'TDX collateral',
      ])
      expect(field({ tcbInfo: { ...collateral.tcbInfo, version: 2 } })).to.deep.equal([
        'tcbInfo.version',
        '3',
        '2',
        'TDX collateral',
      ])
      expect(field({ qeIdentity: { ...collateral.qeIdentity, id: 'QE' } })).to.deep.equal([
        'enclaveIdentity.id',
        'TD_QE',
        'QE',
        'TDX collateral',
      ])
      expect(field({ qeIdentity: { ...collateral.qeIdentity, version: 3 } })).to.deep.equal([
        'enclaveIdentity.version',
        '2',
        '3',
        'TDX collateral',
      ])
    })

    it('dates: valid from issueDate through nextUpdate inclusive; outside, refused naming the member and the date', () => {
      const at = new Date('2031-05-05T00:00:00Z')
      const dated = (issueDate: Date, nextUpdate: Date): TdxCollateral => ({
        ...collateral,
        tcbInfo: { ...collateral.tcbInfo, issueDate, nextUpdate },
        qeIdentity: { ...collateral.qeIdentity, issueDate: new Date(0), nextUpdate: new Date('2100-01-01') },
      })
      // the certificates are valid for ten years from now: check at a date inside
      const inside = new Date(Math.min(at.getTime(), Date.now() + 3600_000))
      checkCollateral(dated(inside, inside), roots, inside)
      const stale = mismatch(() =>
        checkCollateral(dated(new Date(0), new Date(inside.getTime() - 1)), roots, inside),
      )
      expect([stale.field, stale.expected]).to.deep.equal([
        'tcbInfo.nextUpdate',
        `after ${inside.toISOString()}`,
      ])
      expect(stale.found).to.equal(
        `${new Date(inside.getTime() - 1).toISOString()} (expired; fetch fresh collateral from Intel PCS)`,
      )
      const early = mismatch(() =>
        checkCollateral(dated(new Date(inside.getTime() + 1), new Date('2100-01-01')), roots, inside),
      )
      expect([early.field, early.expected, early.found]).to.deep.equal([
        'tcbInfo.issueDate',
        `before ${inside.toISOString()}`,
        new Date(inside.getTime() + 1).toISOString(),
      ])
      const qeStale = mismatch(() =>
        checkCollateral(
          {
            ...collateral,
            qeIdentity: { ...collateral.qeIdentity, nextUpdate: new Date(inside.getTime() - 1) },
          },
          roots,
          inside,
        ),
      )
      expect(qeStale.field).to.equal('enclaveIdentity.nextUpdate')
      const qeEarly = mismatch(() =>
        checkCollateral(
          {
            ...collateral,
            qeIdentity: { ...collateral.qeIdentity, issueDate: new Date(inside.getTime() + 1) },
          },
          roots,
          inside,
        ),
      )
      expect(qeEarly.field).to.equal('enclaveIdentity.issueDate')
    })

    it('a changed QE identity text: its signature does not verify, naming the member and the signer', () => {
      const tampered = {
        ...collateral,
        qeIdentitySigned: {
          ...collateral.qeIdentitySigned,
          text: collateral.qeIdentitySigned.text.replace('TD_QE', 'TD_QF'),
        },
      }
      expect(() => checkCollateral(tampered, roots, now())).to.throw(
        /^TDX collateral: the signature of "enclaveIdentity" does not verify with the TCB signing certificate CN=.*, O=constellation test double \(tampered or from another signer\)$/,
      )
      const shortSignature = {
        ...collateral,
        tcbInfoSigned: { ...collateral.tcbInfoSigned, signature: Buffer.alloc(3) },
      }
      expect(() => checkCollateral(shortSignature, roots, now())).to.throw(
        /signature of "tcbInfo" does not verify/,
      )
    })

    it('a TCB signing certificate with an Ed25519 key (verifying cannot even run): refused as not verifying', () => {
      const ed25519 = generateKeyPairSync('ed25519').publicKey
      const signing = new X509Certificate(withPublicKey(s.certificates.tcbSigning, ed25519, s.keys.root))
      expect(signing.publicKey.asymmetricKeyType).to.equal('ed25519')
      const chain = [signing, ...collateral.tcbInfoSigned.issuerChain.slice(1)]
      const odd = { ...collateral, tcbInfoSigned: { ...collateral.tcbInfoSigned, issuerChain: chain } }
      expect(() => checkCollateral(odd, roots, now())).to.throw(
        AttestationError,
        `TDX collateral: the signature of "tcbInfo" does not verify with the TCB signing certificate ${signing.subject.split('\n').join(', ')} (tampered or from another signer)`,
      )
    })
  })
})
