/** `constellation verify` (operator) and `constellation verifyservice` (node). */
export { verifyNode, expectedMeasurements, DEFAULT_VERIFY_TIMEOUT_MS } from './operator.js'
export type { VerifyRequest, VerifyReport, VerifyOutcome, PcrReport, PcrStatus } from './operator.js'
export { renderVerifyReport } from './render.js'
export { VerifyServiceDaemon, createVerifyService, DEFAULT_STOP_GRACE_MS } from './daemon.js'
export { VerifyService, DESCRIBE_PATH } from './service-definition.js'
export type { DescribeResponse } from './service-definition.js'
