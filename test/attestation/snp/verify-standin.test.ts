/** verifySnpEvidence on reports signed by the SEV-SNP stand-in (v2 and v3, VCEK and VLEK). */
import { randomBytes, X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import {
  parseCertificateTable,
  verifySnpEvidence,
  type SnpEvidence,
  type SnpPolicy,
} from '../../../src/lib/attestation/snp/index.js'
import { createSnpStandIn } from '../../../src/lib/cvm-standin/index.js'
import { flip, MILAN_ARK, policyFor, refusal } from './helpers.js'
import { EvidenceMismatchError } from '../../../src/lib/attestation/errors.js'
import { type SnpStandIn } from '../../../src/lib/cvm-standin/snp.js'

const mismatch = (err: Error, field: string) => {
  expect(err).to.be.instanceOf(EvidenceMismatchError)
  expect((err as EvidenceMismatchError).field).to.equal(field)
}

const DEBUG = 1n << 19n
const MIGRATE_MA = 1n << 18n
const SMT = 1n << 16n

describe('verifySnpEvidence on stand-in reports', function () {
  this.timeout(60_000)
  const standIns: Partial<Record<'VCEK' | 'VLEK', SnpStandIn>> = {}
  let otherVcek: SnpStandIn

  before(async () => {
    ;[standIns.VCEK, standIns.VLEK, otherVcek] = await Promise.all([
      createSnpStandIn({ signer: 'VCEK' }),
      createSnpStandIn({ signer: 'VLEK' }),
      createSnpStandIn({ signer: 'VCEK' }),
    ])
  })

  for (const kind of ['VCEK', 'VLEK'] as const) {
    for (const version of [2, 3] as const) {
      describe(`${kind}-signed, version ${version}`, () => {
        const reportData = randomBytes(64)
        const measurement = randomBytes(48)
        const s = () => standIns[kind]!
        const evidenceFor = (report: Buffer): SnpEvidence => {
          const table = parseCertificateTable(s().certificateTable())
          return {
            report,
            signer: kind === 'VCEK' ? table.vcek : table.vlek,
            chain: [table.ask!, table.ark!],
          }
        }
        const policy = (report: Buffer): SnpPolicy => ({
          ...policyFor(report, new Date()),
          arks: [new X509Certificate(s().ark)],
        })
        const check = (
          fields: Partial<Parameters<SnpStandIn['report']>[0]> = {},
          p: Partial<SnpPolicy> = {},
        ) => {
          const report = s().report({ reportData, measurement, version, ...fields })
          return verifySnpEvidence(evidenceFor(report), { ...policy(report), ...p })
        }

        it('is accepted with the certificate table as the evidence; rootIsAmds is false', () => {
          const v = check()
          expect(v.signer).to.equal(kind)
          expect(v.product).to.equal('Milan')
          expect(v.rootIsAmds).to.equal(false)
          expect(v.report.version).to.equal(version)
          expect(v.report.reportData.equals(reportData)).to.equal(true)
          expect(v.report.measurement.equals(measurement)).to.equal(true)
          if (version === 3) expect(v.report.cpuid).to.deep.equal({ family: 0x19, model: 1, stepping: 0 })
          else expect(v.report.cpuid).to.equal(undefined)
        })

        it("is refused when AMD's ARK is pinned instead of the stand-in's", () => {
          const report = s().report({ reportData, measurement, version })
          mismatch(
            refusal(() => verifySnpEvidence(evidenceFor(report), { ...policy(report), arks: [MILAN_ARK] })),
            `${kind === 'VCEK' ? 'ASK' : 'ASVK'} issuer`,
          )
        })

        it('refuses a one-byte change in the signed body and in the signature', () => {
          const report = s().report({ reportData, measurement, version })
          for (const offset of [0x00 + 4, 0x50, 0x90, 0x180, 0x1a0, 0x2a0, 0x2e8])
            mismatch(
              refusal(() => verifySnpEvidence(evidenceFor(flip(report, offset)), policy(report))),
              'SIGNATURE',
            )
        })

        it("refuses another stand-in's signer with this stand-in's chain", () => {
          const report = s().report({ reportData, measurement, version })
          const other = parseCertificateTable(otherVcek.certificateTable())
          const err = refusal(() =>
            verifySnpEvidence({ ...evidenceFor(report), signer: other.vcek }, policy(report)),
          )
          // the chain is checked before the certificate's kind: a foreign signer fails there
          expect(err).to.be.instanceOf(AttestationError)
          expect(err.message).to.match(
            new RegExp(`no ${kind === 'VCEK' ? 'ASK' : 'ASVK'} in the evidence issued the ${kind}`),
          )
        })

        for (const part of ['bootloader', 'tee', 'snp', 'microcode'] as const) {
          it(`refuses a report whose REPORTED_TCB.${part} differs from the ${kind}'s extension`, () => {
            const tcb = { ...s().tcb, [part]: s().tcb[part] + 1 }
            const err = refusal(() => check({ tcb }))
            mismatch(err, `REPORTED_TCB.${part}`)
            expect((err as EvidenceMismatchError).expected).to.match(
              new RegExp(`the ${kind} certificate's ${part} SPL`),
            )
          })

          it(`refuses REPORTED_TCB.${part} below the minimum`, () => {
            const minimumTcb = { ...s().tcb, [part]: s().tcb[part] + 1 }
            mismatch(
              refusal(() => check({}, { minimumTcb })),
              `REPORTED_TCB.${part}`,
            )
          })
        }

        it('refuses DEBUG always, even with everything else allowed', () => {
          const policyBits = 0x20000n | DEBUG
          mismatch(
            refusal(() => check({ policy: policyBits }, { allowSmt: true, allowMigrationAgent: true })),
            'POLICY.DEBUG',
          )
        })

        it('refuses MIGRATE_MA unless allowed', () => {
          mismatch(
            refusal(() => check({ policy: 0x20000n | MIGRATE_MA })),
            'POLICY.MIGRATE_MA',
          )
          expect(check({ policy: 0x20000n | MIGRATE_MA }, { allowMigrationAgent: true }).signer).to.equal(
            kind,
          )
        })

        it('refuses SMT unless allowed', () => {
          mismatch(
            refusal(() => check({ policy: 0x20000n | SMT }, { allowSmt: false })),
            'POLICY.SMT',
          )
          expect(check({ policy: 0x20000n | SMT }, { allowSmt: true }).report.policyBits.smt).to.equal(true)
        })

        it('refuses a wrong launch measurement and a wrong REPORT_DATA', () => {
          mismatch(
            refusal(() => check({}, { launchMeasurement: randomBytes(48) })),
            'MEASUREMENT',
          )
          mismatch(
            refusal(() => check({}, { reportData: randomBytes(64) })),
            'REPORT_DATA',
          )
        })

        it(`refuses evidence without the ${kind}`, () => {
          const report = s().report({ reportData, measurement, version })
          const err = refusal(() =>
            verifySnpEvidence({ ...evidenceFor(report), signer: undefined }, policy(report)),
          )
          expect(err).to.be.instanceOf(AttestationError)
          expect(err.message).to.match(new RegExp(`the evidence carries no ${kind}`))
        })
      })
    }
  }

  it("refuses a VCEK report whose CHIP_ID is not the VCEK's hwID, unless MASK_CHIP_KEY is set", () => {
    const s = standIns.VCEK!
    const table = parseCertificateTable(s.certificateTable())
    const run = (report: Buffer) =>
      verifySnpEvidence(
        { report, signer: table.vcek, chain: [table.ask!] },
        { ...policyFor(report, new Date()), arks: [new X509Certificate(s.ark)] },
      )
    const other = randomBytes(64)
    const err = refusal(() => run(s.report({ reportData: Buffer.alloc(64), chipId: other })))
    mismatch(err, 'CHIP_ID')
    expect((err as EvidenceMismatchError).found).to.equal(other.toString('hex'))
    const masked = run(
      s.report({ reportData: Buffer.alloc(64), chipId: Buffer.alloc(64), maskChipKey: true }),
    )
    expect(masked.report.signerInfo.maskChipKey).to.equal(true)
  })

  it('refuses a VLEK-signed report offered with a VCEK (swapped signer kind)', () => {
    const report = standIns.VLEK!.report({ reportData: Buffer.alloc(64) })
    const vcekTable = parseCertificateTable(standIns.VCEK!.certificateTable())
    const err = refusal(() =>
      verifySnpEvidence(
        { report, signer: vcekTable.vcek, chain: [vcekTable.ask!] },
        { ...policyFor(report, new Date()), arks: [new X509Certificate(standIns.VCEK!.ark)] },
      ),
    )
    mismatch(err, 'signer certificate')
    expect((err as EvidenceMismatchError).found).to.equal('a VCEK')
  })
})
