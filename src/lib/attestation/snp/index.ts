/** AMD SEV-SNP: the attestation report, the extended report's certificate table, verification. */
export { parseSnpReport } from './report.js'
export type { SnpGuestPolicy, SnpReport, SnpSigningKey, SnpTcb } from './report.js'
export { CERTIFICATE_GUIDS, encodeCertificateTable, parseCertificateTable } from './cert-table.js'
export type { SnpCertificateKind, SnpCertificates } from './cert-table.js'
export { AMD_OID, encodeAmdExtensions, readAmdExtensions } from './amd-extensions.js'
export type { AmdKeyExtensions, TcbLevels } from './amd-extensions.js'
export { verifySnpEvidence } from './verify.js'
export type { SnpEvidence, SnpPolicy, SnpVerified } from './verify.js'
export {
  OFFSET as SNP_REPORT_OFFSET,
  REPORT_SIZE as SNP_REPORT_SIZE,
  SIGNED_LENGTH as SNP_SIGNED_LENGTH,
} from './layout.js'
