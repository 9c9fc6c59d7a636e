/** Attested TLS: certificates carrying attestation documents, nonce transport, grpc-js credentials. */
export { createAttestedServerCredentials } from './server-credentials.js'
export type { AttestedServerOptions } from './server-credentials.js'
export { createAttestedChannelCredentials } from './channel-credentials.js'
export type { AttestedChannelOptions } from './channel-credentials.js'
export { isAttestationFailure, REFUSAL_PREFIX } from './failure.js'
export {
  createAttestedCertificate,
  verifyAttestedCertificate,
  userDataOf,
  CERT_VALIDITY_SLACK_MS,
  prepareCertificateEncoder,
} from './certificate.js'
export type { AttestedCertificate } from './certificate.js'
export { encodeNonce, decodeNonce, NONCE_BYTES } from './nonce.js'
export { ChallengeRegistry, ChallengeService, CHALLENGE_PATH, CHALLENGE_TTL_MS } from './challenge.js'
export {
  listenForAttestedClients,
  createAttestedClientChannelCredentials,
  addChallengeService,
} from './client-attested.js'
export type { AttestedClientListenerOptions, AttestedClientListener } from './client-attested.js'
