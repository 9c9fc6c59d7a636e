/** Attested TLS: certificates carrying attestation documents, nonce transport, grpc-js credentials. */
export { createAttestedServerCredentials } from './server-credentials.js'
export { createAttestedChannelCredentials } from './channel-credentials.js'
export { attestationRefusalOf, isAttestationFailure } from './failure.js'
export { preloadX509, prepareCertificateEncoder } from './certificate.js'
export { ChallengeRegistry } from './challenge-registry.js'

export { listenForAttestedClients } from './client-attested.js'
export { openAttestedClientChannel, clientOn } from './attested-client-channel.js'
export type { AttestedClientListener } from './client-attested.js'
