/** Intel TDX attestation: quote v4 and TD report parsing, quote verification with TCB evaluation from Intel's collateral. */
export { parseTdxQuote, encodeTdQuoteBody, encodeSgxReportBody, MAX_QUOTE_BYTES } from './quote.js'
export type { TdxQuote, TdxQuoteHeader, TdQuoteBody, SgxReportBody } from './quote.js'
export { parseTdReport, encodeTdReport, tdReportToQuoteBody } from './td-report.js'
export type { TdReport, TdReportFields } from './td-report.js'
export {
  parseTdxCollateral,
  readTdxCollateral,
  TDX_COLLATERAL_FILES,
  MAX_COLLATERAL_FILE_BYTES,
} from './collateral.js'
export type {
  TdxCollateral,
  TdxCollateralFiles,
  TdxTcbInfo,
  TdQeIdentity,
  TdxTcbLevel,
} from './collateral.js'
export { verifyTdxQuote, NOT_EVALUATED } from './verify.js'
export type { TdxPolicy, TdxVerified } from './verify.js'
export { encodePckExtension, decodePckExtension, pckExtensionOf, SGX_EXTENSION_OID } from './pck-extension.js'
export type { PckExtension } from './pck-extension.js'
export {
  ATTESTATION_KEY_TYPE_ECDSA_P256,
  CERT_DATA_PCK_CHAIN,
  CERT_DATA_QE_REPORT,
  HEADER_SIZE,
  QUOTE_VERSION_V4,
  TD_QUOTE_BODY_SIZE,
  TD_REPORT_SIZE,
  TEE_TYPE_TDX,
} from './layout.js'
