/**
 * A confidential-VM node's hardware, as its issuer reaches it: the SEV-SNP report or TDX quote
 * through the kernel's configfs-tsm (under the node root, so a stand-in can serve it where no CVM
 * exists), and on Azure the HCL report in the vTPM and the cloud's IMDS.
 */
import { azureImds, cvmKind, type CvmHardware, type CvmVariant } from '../lib/attestation/index.js'
import { nodePaths } from '../lib/paths.js'
import { readNvIndex, withTpm, type OpenTpm } from '../lib/tpm/index.js'
import { requestTsmReport } from '../lib/tsm/index.js'

/** Where Azure's firmware (the HCL) keeps its report in the vTPM. */
export const AZURE_HCL_REPORT_NV_INDEX = 0x01400001

export function nodeCvmHardware(variant: CvmVariant, root: string, openTpm: OpenTpm): CvmHardware {
  const provider = cvmKind(variant) === 'snp' ? 'sev_guest' : 'tdx_guest'
  const imds = azureImds()
  return {
    report: (reportData) =>
      requestTsmReport({ root: nodePaths(root).tsmReport, inblob: reportData, provider }),
    hclReport: () => withTpm(openTpm, (t) => readNvIndex(t, AZURE_HCL_REPORT_NV_INDEX)),
    vcek: () => imds.vcek(),
    tdQuote: (tdReport) => imds.tdQuote(tdReport),
  }
}
