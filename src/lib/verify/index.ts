/** `constellation verify` (operator) and `constellation verifyservice` (node). */
export { verifyNode, readNodePcrs, parseAttestTimeout, DEFAULT_VERIFY_TIMEOUT_MS } from './operator.js'
export type { VerifyReport } from './operator.js'
export { resolveVerifyTarget } from './target.js'
export { verifyServiceTarget } from './endpoint.js'
export { renderVerifyReport } from './render.js'
export { VerifyServiceDaemon } from './daemon.js'
export { VERIFY_PROTOCOLS } from './get-attestation-client.js'
