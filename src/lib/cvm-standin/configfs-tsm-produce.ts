/**
 * The SEV-SNP and TDX stand-in signers as configfs-tsm's providers use their hardware: what the
 * sev-guest and tdx-guest drivers do with inblob, so the host needs only `produce` from the caller.
 */
import type { ProduceEvidence } from './configfs-tsm.js'

/** What configfs-tsm needs of the SEV-SNP stand-in (snp.ts): a signed report and the certificate table. */
export interface SnpEvidenceSource {
  report(req: { reportData: Buffer }): Buffer | Promise<Buffer>
  certificateTable(): Buffer | Promise<Buffer>
}

/** What configfs-tsm needs of the TDX stand-in (tdx.ts): a quote. */
export interface TdxEvidenceSource {
  quote(req: { reportData: Buffer }): Buffer | Promise<Buffer>
}

const REPORT_DATA_BYTES = 64

/** sev-guest copies inblob into a zeroed 64-byte REPORT_DATA; auxblob is the extended report's certificate table. */
export function produceSnpEvidence(snp: SnpEvidenceSource): ProduceEvidence {
  return async (inblob) => {
    const reportData = Buffer.alloc(REPORT_DATA_BYTES)
    inblob.copy(reportData)
    return { outblob: await snp.report({ reportData }), auxblob: await snp.certificateTable() }
  }
}

/** tdx-guest takes exactly 64 bytes of REPORTDATA (anything else fails the outblob read with EINVAL). */
export function produceTdxEvidence(tdx: TdxEvidenceSource): ProduceEvidence {
  return async (inblob) => {
    if (inblob.length !== REPORT_DATA_BYTES)
      throw new Error(`tdx_guest takes a 64-byte inblob, got ${inblob.length} bytes (EINVAL)`)
    return { outblob: await tdx.quote({ reportData: Buffer.from(inblob) }) }
  }
}
