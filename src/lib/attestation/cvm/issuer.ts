/**
 * The issuer of every confidential-VM variant: the vTPM quote qemu-vtpm issues, with the hardware
 * evidence in InstanceInfo (which the quote's qualifying data commits to). The report is asked for
 * with the REPORT_DATA the variant binds to the AK; on Azure the HCL report in the vTPM already
 * names the HCL's own AK, so that key quotes.
 */
import { parseHclReport } from '../azure/index.js'
import { encodeDocument } from '../document.js'
import { AttestationError } from '../errors.js'
import type { Issuer, IssuerOptions } from '../types.js'
import { VARIANT_OIDS, type CvmVariant } from '../variant.js'
import { issueQuoteDocument } from '../vtpm-quote.js'
import type { OpenTpm } from '../../tpm/index.js'
import { expectedReportData } from './binding.js'
import { encodeSnpInstanceInfo, encodeTdxInstanceInfo } from './instance-info.js'
import type { CvmHardware } from './policy.js'
import { certificateTableToPem } from './certificate-table.js'

/** Azure's HCL keeps its attestation key persistent here (Constellation quotes with it). */
export const AZURE_HCL_AK_HANDLE = 0x81000003

export function createCvmIssuer(variant: CvmVariant, open: OpenTpm, opts: IssuerOptions): Issuer {
  const hardware = opts.cvm
  if (!hardware)
    throw new AttestationError(
      `${variant} issuing needs the node's confidential-VM hardware; none was configured`,
    )
  return {
    variant,
    oid: VARIANT_OIDS[variant],
    async issue(userData, nonce) {
      if (variant === 'azure-sev-snp' || variant === 'azure-tdx') {
        // the HCL report names its AK already: read before the quote's TPM session, which it needs too
        const info = await azureEvidence(variant, hardware)
        return encodeDocument(
          await issueQuoteDocument(open, userData, nonce, opts, {
            instanceInfo: () => Promise.resolve(info),
            key: AZURE_HCL_AK_HANDLE,
          }),
        )
      }
      const instanceInfo = (akPub: Buffer) => evidence(variant, hardware, akPub, userData, nonce)
      return encodeDocument(await issueQuoteDocument(open, userData, nonce, opts, { instanceInfo }))
    },
  }
}

async function evidence(
  variant: Exclude<CvmVariant, 'azure-sev-snp' | 'azure-tdx'>,
  hw: CvmHardware,
  akPub: Buffer,
  userData: Buffer,
  nonce: Buffer,
): Promise<Buffer> {
  switch (variant) {
    case 'aws-sev-snp':
    case 'gcp-sev-snp': {
      const { outblob, auxblob } = await hw.report(expectedReportData(variant, akPub, userData, nonce))
      const { signer, chain } = certificateTableToPem(auxblob, variant)
      return encodeSnpInstanceInfo({ attestationReport: outblob, reportSigner: signer, certChain: chain })
    }
    case 'qemu-tdx': {
      const { outblob } = await hw.report(expectedReportData(variant, akPub, userData, nonce))
      return encodeTdxInstanceInfo({ quote: outblob })
    }
  }
}

async function azureEvidence(variant: 'azure-sev-snp' | 'azure-tdx', hw: CvmHardware): Promise<Buffer> {
  const hcl = parseHclReport(await need(hw.hclReport, variant, 'the HCL report (vTPM NV index 0x01400001)')())
  if (variant === 'azure-sev-snp') {
    const { vcek, chain } = await need(hw.vcek, variant, "the VCEK from the cloud's cache")()
    return encodeSnpInstanceInfo({
      attestationReport: hcl.hardwareReport,
      reportSigner: vcek,
      certChain: chain,
      azureRuntimeData: hcl.runtimeData,
    })
  }
  const quote = await need(hw.tdQuote, variant, 'a quote from IMDS')(hcl.hardwareReport)
  return encodeTdxInstanceInfo({ quote, runtimeData: hcl.runtimeData })
}

function need<T>(fn: T | undefined, variant: CvmVariant, what: string): T {
  if (!fn) throw new AttestationError(`${variant} issuing needs ${what}, which this node was not given`)
  return fn
}
