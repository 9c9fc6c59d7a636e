/** Azure confidential VMs: the HCL report in the vTPM and its binding of the HCL attestation key. */
export {
  checkHclBinding,
  encodeHclReport,
  hclAttestationKey,
  hclReportData,
  parseHclReport,
} from './hcl-report.js'
export type { HclReport } from './hcl-report.js'
