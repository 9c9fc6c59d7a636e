/** The join service: join tickets for attested nodes, bootstrap tokens, kubelet certificates, measurements reload. */
export {
  BOOTSTRAP_TOKEN_PATTERN,
  BOOTSTRAP_TOKEN_TTL_MS,
  bootstrapTokenSecret,
  createTokenIssuer,
  TokenIdTakenError,
} from './bootstrap-token.js'
export type { BootstrapTokenSecret, TokenIssuer, TokenRegistrar } from './bootstrap-token.js'
export { caCertHash, loadClusterCa, CONTROL_PLANE_PKI_FILES } from './cluster-ca.js'
export type { ClusterCa, ControlPlaneFile } from './cluster-ca.js'
export { parseJoinConfig, encodeJoinConfig, JoinConfigError } from './join-config.js'
export { MeasurementsStore, JOIN_CONFIG_POLL_INTERVAL_MS } from './measurements-store.js'
export type { MeasurementsSource, MeasurementsStoreOptions } from './measurements-store.js'
export { Admission, DEFAULT_WORKER_JOIN_CONCURRENCY } from './admission.js'
export type { AdmissionLimits } from './admission.js'
export { csrProblems, claimedNodeName, isRfc1123Name, P256_CURVE } from './csr-policy.js'
export type { CsrFields, CsrKey, CsrParser, CsrProblem, CsrContext } from './csr-policy.js'
export { sameIp, peerHost } from './ip-address.js'
export { createKubeletSigner } from './kubelet-signer.js'
export type { KubeletSigner, KubeletSignerOptions } from './kubelet-signer.js'
export {
  checkJoinRequest,
  checkDiskUuid,
  issueJoinTicket,
  issueRejoinTicket,
  JoinRefusedError,
  TicketStepError,
  STATE_DISK_KEY_BYTES,
  MEASUREMENT_SECRET_BYTES,
} from './ticket.js'
export type { CheckedJoinRequest, DataKeyGetter, RequestCheckDeps, TicketDeps } from './ticket.js'
export { createAuditLog } from './audit.js'
export type { AuditLog, AuditRecord, Verdict } from './audit.js'
export { validatorSourceFrom, handshakeValidator } from './validator-source.js'
export type { ValidatorSource } from './validator-source.js'
export { createJoinService, JoinService, DEFAULT_JOIN_SERVICE_LISTEN } from './server.js'
export type { JoinServiceOptions, JoinServiceLimits } from './server.js'
