/** The node-side client of the kernel's configfs-tsm report interface (SEV-SNP and TDX guests). */
export { requestTsmReport, TSM_DEFAULT_TIMEOUT_MS } from './report.js'
export type { TsmReport, TsmReportRequest } from './report.js'
export {
  TSM_REPORT_ROOT,
  TSM_INBLOB_MAX_BYTES,
  TSM_OUTBLOB_MAX_BYTES,
  TSM_PRIVLEVEL_MAX,
  TSM_PROVIDERS,
  isTsmProvider,
  TsmReportError,
} from './attributes.js'
export type { TsmProvider } from './attributes.js'
