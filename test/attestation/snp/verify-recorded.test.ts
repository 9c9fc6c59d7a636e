/** verifySnpEvidence on evidence recorded on real AMD hardware (Azure and AWS), against AMD's own ARKs. */
import { X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import { parseSnpReport, verifySnpEvidence, type SnpPolicy } from '../../../src/lib/attestation/snp/index.js'
import { createSnpStandIn } from '../../../src/lib/cvm-standin/index.js'
import {
  AMD_ARKS,
  der,
  fixture,
  flip,
  MILAN_ARK,
  pems,
  policyFor,
  recordedCases,
  refusal,
} from './helpers.js'
import { EvidenceMismatchError } from '../../../src/lib/attestation/errors.js'

const mismatch = (err: Error, field: string) => {
  expect(err).to.be.instanceOf(EvidenceMismatchError)
  expect((err as EvidenceMismatchError).field).to.equal(field)
}
const plainRefusal = (err: Error, message: RegExp) => {
  expect(err).to.be.instanceOf(AttestationError)
  expect(err).not.to.be.instanceOf(EvidenceMismatchError)
  expect(err.message).to.match(message)
}

describe('verifySnpEvidence on recorded AMD evidence', function () {
  this.timeout(60_000)
  const [genoaAsk, genoaArk] = pems(fixture('genoa-ask-ark.pem'))
  let standInArk: X509Certificate

  before(async () => {
    standInArk = new X509Certificate((await createSnpStandIn()).ark)
  })

  for (const c of recordedCases()) {
    describe(c.name, () => {
      const policy = (): SnpPolicy => policyFor(c.evidence.report, c.now)
      const run = (evidence = c.evidence, p: Partial<SnpPolicy> = {}) =>
        verifySnpEvidence(evidence, { ...policy(), ...p })
      const r = parseSnpReport(c.evidence.report)

      it('is accepted under a policy derived from its own values, chained to AMD Milan ARK', () => {
        const v = run()
        expect(v.signer).to.equal(c.signer)
        expect(v.product).to.equal('Milan')
        expect(v.rootIsAmds).to.equal(true)
        expect(v.ark.raw.equals(MILAN_ARK.raw)).to.equal(true)
        expect(v.warnings).to.deep.equal([])
      })

      it('warns when the policy pins no launch measurement', () => {
        expect(run(c.evidence, { launchMeasurement: undefined }).warnings.join()).to.match(
          /launch measurement not checked/,
        )
      })

      it('accepts the ASK pinned as signing key and refuses another pin', () => {
        const ask = new X509Certificate(c.evidence.chain?.[0] ?? '')
        expect(run(c.evidence, { signingKeyPins: [ask] }).signer).to.equal(c.signer)
        mismatch(
          refusal(() => run(c.evidence, { signingKeyPins: [new X509Certificate(genoaAsk ?? '')] })),
          c.signer === 'VCEK' ? 'ASK' : 'ASVK',
        )
      })

      it('refuses a one-byte change in the signed body (REPORT_DATA, TCB, policy, measurement, CHIP_ID, build)', () => {
        for (const offset of [0x50, 0x180, 0x186, 0x08, 0x90, 0x1a0, 0x1e8]) {
          mismatch(
            refusal(() => run({ ...c.evidence, report: flip(c.evidence.report, offset) })),
            'SIGNATURE',
          )
        }
      })

      it('refuses a one-byte change in the signature (r and s)', () => {
        mismatch(
          refusal(() => run({ ...c.evidence, report: flip(c.evidence.report, 0x2a0) })),
          'SIGNATURE',
        )
        mismatch(
          refusal(() => run({ ...c.evidence, report: flip(c.evidence.report, 0x2e8 + 47) })),
          'SIGNATURE',
        )
      })

      it('refuses a nonzero byte in the signature padding as malformed', () => {
        plainRefusal(
          refusal(() => run({ ...c.evidence, report: flip(c.evidence.report, 0x2d0) })),
          /SIGNATURE\.R high bytes \(offset 0x2d0\)/,
        )
      })

      it('refuses evidence without its signer certificate, naming which', () => {
        plainRefusal(
          refusal(() => run({ ...c.evidence, signer: undefined })),
          new RegExp(`the evidence carries no ${c.signer}`),
        )
      })

      it('refuses a chain without the ASK/ASVK', () => {
        plainRefusal(
          refusal(() => run({ ...c.evidence, chain: [] })),
          /no AS[KV]K? in the evidence issued/,
        )
      })

      it('refuses an ASK from another product (Genoa)', () => {
        plainRefusal(
          refusal(() => run({ ...c.evidence, chain: [genoaAsk ?? Buffer.alloc(0)] })),
          /no AS[KV]K? in the evidence issued .*offered .*SEV-Genoa/,
        )
      })

      it("refuses when only a stand-in's ARK is pinned, naming the ASK's issuer", () => {
        const err = refusal(() => run(c.evidence, { arks: [standInArk] }))
        mismatch(err, c.signer === 'VCEK' ? 'ASK issuer' : 'ASVK issuer')
        expect(err.message).to.match(/CN=ARK-Milan, which no pinned ARK verifies/)
      })

      it('refuses an ARK offered in the evidence but not pinned', () => {
        const chain = [...(c.evidence.chain ?? []), MILAN_ARK.raw]
        mismatch(
          refusal(() => run({ ...c.evidence, chain }, { arks: [new X509Certificate(genoaArk ?? '')] })),
          c.signer === 'VCEK' ? 'ASK issuer' : 'ASVK issuer',
        )
      })

      it("refuses outside the certificates' validity", () => {
        mismatch(
          refusal(() => run(c.evidence, { now: () => new Date('2100-01-01T00:00:00Z') })),
          `${c.signer} validity`,
        )
        mismatch(
          refusal(() => run(c.evidence, { now: () => new Date('2019-01-01T00:00:00Z') })),
          `${c.signer} validity`,
        )
      })

      for (const part of ['bootloader', 'tee', 'snp', 'microcode'] as const) {
        it(`refuses REPORTED_TCB.${part} below the minimum`, () => {
          const minimumTcb = { ...policy().minimumTcb, [part]: r.reportedTcb[part] + 1 }
          const err = refusal(() => run(c.evidence, { minimumTcb }))
          mismatch(err, `REPORTED_TCB.${part}`)
          expect((err as EvidenceMismatchError).expected).to.equal(`at least ${r.reportedTcb[part] + 1}`)
        })
      }

      it('refuses a wrong launch measurement', () => {
        mismatch(
          refusal(() => run(c.evidence, { launchMeasurement: flip(r.measurement, 0) })),
          'MEASUREMENT',
        )
      })

      it('refuses a wrong REPORT_DATA', () => {
        const err = refusal(() => run(c.evidence, { reportData: flip(r.reportData, 63) }))
        mismatch(err, 'REPORT_DATA')
        expect((err as EvidenceMismatchError).found).to.equal(r.reportData.toString('hex'))
      })
    })
  }

  it('refuses the Azure report (SMT on) when SMT is not allowed', () => {
    const [c] = recordedCases()
    mismatch(
      refusal(() =>
        verifySnpEvidence(c!.evidence, { ...policyFor(c!.evidence.report, c!.now), allowSmt: false }),
      ),
      'POLICY.SMT',
    )
  })

  it('refuses a swapped chain: the VLEK and its ASVK for the VCEK-signed report', () => {
    const [c] = recordedCases()
    const evidence = {
      report: c!.evidence.report,
      signer: fixture('aws-vlek.pem'),
      chain: pems(fixture('aws-certchain.pem')),
    }
    mismatch(
      refusal(() => verifySnpEvidence(evidence, policyFor(evidence.report, new Date('2025-06-01')))),
      'signer certificate',
    )
  })

  it("refuses the VCEK's chain (ASK) offered for the VLEK-signed report", () => {
    const c = recordedCases()[2]!
    const evidence = { ...c.evidence, chain: pems(fixture('certchain.pem')) }
    plainRefusal(
      refusal(() => verifySnpEvidence(evidence, policyFor(evidence.report, c.now))),
      /no ASVK in the evidence issued the VLEK/,
    )
  })

  it("refuses Constellation's AttestationReportVLEK constant: its signature does not verify under vlek.pem", () => {
    // Constellation's own test only unmarshals this report; its TCB matches vlek.pem, its signature does not
    const evidence = {
      report: fixture('attestation-vlek.bin'),
      signer: fixture('vlek.pem'),
      chain: pems(fixture('vlekcertchain.pem')),
    }
    mismatch(
      refusal(() => verifySnpEvidence(evidence, policyFor(evidence.report, new Date('2024-01-01')))),
      'SIGNATURE',
    )
  })

  it('accepts the PEM chain as DER and refuses a chain entry that is no certificate', () => {
    const c = recordedCases()[0]!
    expect(
      verifySnpEvidence(
        { ...c.evidence, chain: c.evidence.chain!.map(der) },
        policyFor(c.evidence.report, c.now),
      ).signer,
    ).to.equal('VCEK')
    plainRefusal(
      refusal(() =>
        verifySnpEvidence(
          { ...c.evidence, chain: [Buffer.from('nope')] },
          policyFor(c.evidence.report, c.now),
        ),
      ),
      /chain\[0\] certificate is not an X\.509/,
    )
  })

  it('refuses a policy whose reportData is not 64 bytes', () => {
    const c = recordedCases()[0]!
    plainRefusal(
      refusal(() =>
        verifySnpEvidence(c.evidence, {
          ...policyFor(c.evidence.report, c.now),
          reportData: Buffer.alloc(32),
        }),
      ),
      /reportData is 32 bytes/,
    )
  })

  it('pins AMD ARKs from vendor-roots.ts only: rootIsAmds is false for a stand-in root', () => {
    expect(AMD_ARKS.some((a) => a.raw.equals(standInArk.raw))).to.equal(false)
  })
})
