/**
 * The confidential-VM variants on swtpm with the stand-in hardware (medians): what the hardware
 * evidence adds to a vTPM quote's verification (chain, signature, TCB, binding), per variant, and the
 * issue + verify round trip through configfs-tsm as a node does it. The recorded real evidence is
 * verified too, so the figure does not rest on the stand-in's small RSA keys alone.
 */
import { randomBytes, X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import {
  createIssuer,
  createValidator,
  snp,
  tdx,
  type CvmValidationPolicy,
} from '../src/lib/attestation/index.js'
import { AMD_ROOT_KEYS, INTEL_SGX_ROOT_CA } from '../src/lib/attestation/vendor-roots.js'
import {
  createSnpStandIn,
  createTdxStandIn,
  produceSnpEvidence,
  produceTdxEvidence,
  startConfigfsTsmStandIn,
} from '../src/lib/cvm-standin/index.js'
import { requestTsmReport } from '../src/lib/tsm/index.js'
import { startSwtpm } from '../test/support/swtpm.js'
import { makeTempDir } from '../test/support/temp.js'
import { summarize, timeRuns } from './stats.js'

const RUNS = 40
const FIXTURES = path.join(path.dirname(new URL(import.meta.url).pathname), '../test/fixtures/cvm')

export default async function cvm() {
  const [tpm, tmp, amd, intel] = await Promise.all([
    startSwtpm(),
    makeTempDir('constell-bench-cvm-'),
    createSnpStandIn({ signer: 'VCEK' }),
    createTdxStandIn(),
  ])
  const stops: Array<() => Promise<void>> = []
  try {
    const userData = randomBytes(32)
    const variants = {
      'gcp-sev-snp': {
        provider: 'sev_guest' as const,
        produce: produceSnpEvidence(amd),
        policy: {
          kind: 'snp',
          arks: [new X509Certificate(amd.ark)],
          minimumTcb: amd.tcb,
          allowMigrationAgent: false,
          allowSmt: false,
        } satisfies CvmValidationPolicy,
      },
      'qemu-tdx': {
        provider: 'tdx_guest' as const,
        produce: produceTdxEvidence(intel),
        policy: {
          kind: 'tdx',
          intelRoots: [new X509Certificate(intel.rootPem)],
          minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
        } satisfies CvmValidationPolicy,
      },
    }
    const results: Record<string, unknown> = {}
    for (const [variant, v] of Object.entries(variants)) {
      const dir = path.join(tmp.dir, variant)
      await mkdir(dir)
      const standIn = await startConfigfsTsmStandIn({ dir, provider: v.provider, produce: v.produce })
      stops.push(() => standIn.stop())
      const name = variant as keyof typeof variants
      const issuer = createIssuer(name, tpm.open, {
        cvm: {
          report: (reportData) => requestTsmReport({ root: dir, inblob: reportData, provider: v.provider }),
        },
      })
      const validator = createValidator(name, new Map(), undefined, { cvm: v.policy })
      const nonce = randomBytes(32)
      const doc = await issuer.issue(userData, nonce)
      const verify = await timeRuns(RUNS, async () => void (await validator.validate(doc, nonce)))
      const both = await timeRuns(RUNS / 4, async () => {
        const n = randomBytes(32)
        await validator.validate(await issuer.issue(userData, n), n)
      })
      results[variant] = {
        verify: summarize(verify),
        issueThroughConfigfsTsmStandInAndVerify: summarize(both),
      }
    }
    // the recorded real evidence: AMD's RSA-4096 chain and Intel's P-256 chain
    const fixture = (kind: string, file: string) => readFileSync(path.join(FIXTURES, kind, file))
    const azureReport = fixture('snp', 'attestation.bin').subarray(0, snp.SNP_REPORT_SIZE)
    const report = snp.parseSnpReport(azureReport)
    const chain = fixture('snp', 'certchain.pem')
    const recordedSnp = await timeRuns(RUNS, async () => {
      snp.verifySnpEvidence(
        { report: azureReport, signer: fixture('snp', 'vcek.pem'), chain: [chain] },
        {
          arks: Object.values(AMD_ROOT_KEYS).map((p) => new X509Certificate(p)),
          minimumTcb: { bootloader: 0, tee: 0, snp: 0, microcode: 0 },
          reportData: report.reportData,
          allowMigrationAgent: true,
          allowSmt: true,
          now: () => new Date('2025-01-01T00:00:00Z'),
        },
      )
    })
    const quote = fixture('tdx', 'tdx_prod_quote_SPR_E4.dat')
    const parsed = tdx.parseTdxQuote(quote)
    const recordedTdx = await timeRuns(RUNS, async () => {
      tdx.verifyTdxQuote(quote, {
        intelRoots: [new X509Certificate(INTEL_SGX_ROOT_CA)],
        reportData: parsed.body.reportData,
        minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
        now: () => new Date('2023-07-01T00:00:00Z'),
      })
    })
    return {
      ...results,
      recordedAzureSnpReportVerify: summarize(recordedSnp),
      recordedTdxQuoteVerify: summarize(recordedTdx),
      note: 'stand-in hardware served through a configfs-tsm directory; the vTPM is swtpm',
    }
  } finally {
    for (const stop of stops) await stop()
    await Promise.all([tpm.stop(), tmp.cleanup()])
  }
}
