/** The node-side client of the kernel's configfs-tsm report interface (SEV-SNP and TDX guests). */
export { requestTsmReport } from './report.js'
export { TSM_INBLOB_MAX_BYTES, TSM_OUTBLOB_MAX_BYTES, TSM_PRIVLEVEL_MAX } from './attributes.js'
export type { TsmProvider } from './attributes.js'
