/** `constellation verify` (operator) and `constellation verifyservice` (node). */
export {
  verifyNode,
  readNodePcrs,
  parseAttestTimeout,
  expectedMeasurements,
  UntrustedNodeError,
  DEFAULT_VERIFY_TIMEOUT_MS,
} from './operator.js'
export type {
  AttestRequest,
  VerifyRequest,
  VerifyReport,
  VerifyOutcome,
  PcrReport,
  PcrStatus,
} from './operator.js'
export { resolveVerifyTarget } from './target.js'
export type { VerifyTarget, VerifyTargetFlags } from './target.js'
export { verifyServiceTarget, VERIFY_SERVICE_PORT } from './endpoint.js'
export { renderVerifyReport } from './render.js'
export { VerifyServiceDaemon, DEFAULT_STOP_GRACE_MS } from './daemon.js'
export { VerifyService, DESCRIBE_PATH } from './service-definition.js'
export type { DescribeResponse } from './service-definition.js'
