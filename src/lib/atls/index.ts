/** Attested TLS: certificates carrying attestation documents, nonce transport, grpc-js credentials. */
export { createAttestedServerCredentials } from './server-credentials.js'
export { createAttestedChannelCredentials } from './channel-credentials.js'
export { attestationRefusalOf, isAttestationFailure, REFUSAL_PREFIX } from './failure.js'
export { prepareCertificateEncoder } from './certificate.js'
export { ChallengeLimitError, ChallengeRegistry } from './challenge-registry.js'
export type { ChallengeLimits } from './challenge-registry.js'
export {
  listenForAttestedClients,
  addChallengeService,
  createAttestedClientChannelCredentials,
} from './client-attested.js'
export type { AttestedClientListener } from './client-attested.js'
