/** 10,000 seeded mutations each: the SNP parsers and the verifier fail only with AttestationError. */
import { X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { mutate, seededRandom } from '../../support/fuzz.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import {
  encodeCertificateTable,
  parseCertificateTable,
  parseSnpReport,
  verifySnpEvidence,
  type SnpEvidence,
} from '../../../src/lib/attestation/snp/index.js'
import { createSnpStandIn } from '../../../src/lib/cvm-standin/index.js'
import { der, policyFor, recordedCases } from './helpers.js'

const RUNS = 10_000

/** Mostly same-length byte flips (they get past the size check), sometimes the generic mutations. */
function mutateKeepingShape(input: Buffer, rnd: () => number): Buffer {
  if (rnd() < 0.25) return mutate(input, rnd)
  const out = Buffer.from(input)
  for (let i = 0, n = 1 + Math.floor(rnd() * 3); i < n; i++)
    out[Math.floor(rnd() * out.length)] = Math.floor(rnd() * 256)
  return out
}

function onlyClean(run: () => unknown, label: string, i: number): 'ok' | 'refused' {
  try {
    run()
    return 'ok'
  } catch (err) {
    if (err instanceof AttestationError) return 'refused'
    throw new Error(
      `${label} iteration ${i}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
      { cause: err },
    )
  }
}

describe('SEV-SNP parsers and verifier on mutated input', function () {
  // 10,000 signature checks and chain walks per case: ~15-50 s when two suites share the two
  // cores, and past 60 s once more load comes on top
  this.timeout(180_000)
  const recorded = recordedCases()

  it(`parseSnpReport: ${RUNS} mutated recorded reports`, () => {
    const rnd = seededRandom(0x5e5)
    const seeds = recorded.map((c) => c.evidence.report)
    for (let i = 0; i < RUNS; i++)
      onlyClean(() => parseSnpReport(mutateKeepingShape(seeds[i % seeds.length]!, rnd)), 'parseSnpReport', i)
  })

  it(`parseCertificateTable: ${RUNS} mutated tables`, () => {
    const rnd = seededRandom(0x7ab1e)
    const c = recorded[0]!
    const table = encodeCertificateTable({
      vcek: der(c.evidence.signer!),
      ask: der(c.evidence.chain![0]!),
      ark: der(c.evidence.chain![1]!),
    })
    // mutations of the entry list matter most; the DER after it is opaque to the parser
    const head = table.subarray(0, 96)
    for (let i = 0; i < RUNS; i++) {
      const input = Buffer.concat([mutateKeepingShape(head, rnd), table.subarray(96)])
      onlyClean(() => parseCertificateTable(i % 2 ? input : mutate(table, rnd)), 'parseCertificateTable', i)
    }
  })

  it(`verifySnpEvidence: ${RUNS} mutated reports, signers and chains (recorded and stand-in)`, async () => {
    const s = await createSnpStandIn({ signer: 'VLEK' })
    const table = parseCertificateTable(s.certificateTable())
    const standInReport = s.report({ reportData: Buffer.alloc(64, 7) })
    const cases: { evidence: SnpEvidence; policy: ReturnType<typeof policyFor> }[] = [
      ...recorded.map((c) => ({ evidence: c.evidence, policy: policyFor(c.evidence.report, c.now) })),
      {
        evidence: {
          report: standInReport,
          signer: table.vlek,
          chain: [table.asvk ?? table.ask!, table.ark!],
        },
        policy: policyFor(standInReport, new Date(), [new X509Certificate(s.ark)]),
      },
    ]
    const prepared = cases.map(({ evidence, policy }) => ({
      evidence,
      policy,
      signer: der(evidence.signer!),
      chain: evidence.chain!.map(der),
    }))
    const rnd = seededRandom(0xc0ffee)
    for (let i = 0; i < RUNS; i++) {
      const { evidence, policy, signer, chain } = prepared[i % prepared.length]!
      const which = rnd()
      const mutated: SnpEvidence =
        which < 0.6
          ? { ...evidence, report: mutateKeepingShape(evidence.report, rnd) }
          : which < 0.8
            ? { ...evidence, signer: mutateKeepingShape(signer, rnd) }
            : { ...evidence, chain: chain.map((c) => (rnd() < 0.5 ? mutateKeepingShape(c, rnd) : c)) }
      if (onlyClean(() => verifySnpEvidence(mutated, policy), 'verifySnpEvidence', i) === 'ok') {
        // accepted: then neither the report nor the signer certificate changed (a mutated chain may
        // still pass when only the ignored ARK copy changed)
        expect(
          mutated.report.equals(evidence.report),
          `iteration ${i}: a changed report was accepted`,
        ).to.equal(true)
        expect(der(mutated.signer!).equals(signer), `iteration ${i}: a changed signer was accepted`).to.equal(
          true,
        )
      }
    }
  })
})
