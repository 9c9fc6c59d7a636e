/** What every attestation variant offers: an issuer on the node, a validator on the verifier. */
import type { X509Certificate } from 'node:crypto'
import type { EkPublicKey, MadeCredential } from '../tpm/index.js'
import type { CvmHardware, CvmSummary, CvmValidationPolicy } from './cvm/policy.js'
import type { EventLogReplay } from './eventlog/replay.js'
import type { AttestationVariant } from './variant.js'

/** The key a verifier makes a credential for: the node's EK and the Name of the AK that quoted. */
export interface ActivationTarget {
  ek: EkPublicKey
  /** nameAlg || H(AK public area) */
  akName: Buffer
}

/** What the verifier keeps from its challenge, to check the node's answer against. */
export interface ActivationExpectation {
  /** The credential it wrapped: only the TPM holding the EK and the AK can have unwrapped it. */
  secret: Buffer
  akName: Buffer
}

/** A credential for the node to activate, and what its answer must be. */
export interface ActivationChallenge {
  made: MadeCredential
  expected: ActivationExpectation
}

export interface ValidationResult {
  userData: Buffer
  pcrs: Map<number, Buffer>
  warnings: string[]
  /**
   * The Name (nameAlg || H(public area)) of the key that signed the quote. The AK derives from the
   * TPM's endorsement seed, so it is the same every boot of one TPM and differs between TPMs: what a
   * service records to recognise a node's TPM again (anchored in a manufacturer only with tpm-ek).
   */
  akName: Buffer
  /**
   * Set by variants anchored in the TPM's manufacturer (tpm-ek): the EK and AK a credential must be
   * activated for. `proven` when validate() was given the expectation of a challenge and the document
   * met it; otherwise the quote counts only after the node has activated a credential for this target.
   */
  activation?: ActivationTarget & { proven: boolean }
  /** Set by the confidential-VM variants: what the hardware evidence showed, for verify and status. */
  cvm?: CvmSummary
  /** The node's event log, replayed to the quoted PCRs; unset when the document carried none. */
  eventLog?: EventLogReplay
}

export interface Issuer {
  readonly variant: AttestationVariant
  readonly oid: string
  /** `activationProof`: the secret the node unwrapped, for variants that carry it in the document. */
  issue(userData: Buffer, nonce: Buffer, activationProof?: Buffer): Promise<Buffer>
  /** TPM2_ActivateCredential with the EK and the AK the documents are quoted with (tpm-ek). */
  activate?(made: MadeCredential): Promise<Buffer>
  /** What a verifier needs to make a credential before any document exists (tpm-ek, join direction). */
  activationRequest?(): Promise<Buffer>
}

export interface Validator {
  readonly variant: AttestationVariant
  readonly oid: string
  /** With `expected`, the document must also prove the activation of that challenge. */
  validate(document: Buffer, nonce: Buffer, expected?: ActivationExpectation): Promise<ValidationResult>
  /** Checks an issuer's activationRequest() and makes a credential for it (tpm-ek). */
  challengeActivation?(request: Buffer): Promise<ActivationChallenge>
}

export interface IssuerOptions {
  /** TCG event log (securityfs binary_bios_measurements); attached when the file exists. */
  eventLogPath?: string
  /** The confidential-VM variants: how this node reaches its hardware evidence. */
  cvm?: CvmHardware
}

export interface ValidatorOptions {
  /** Manufacturer CA certificates an EK certificate must chain to (tpm-ek). */
  roots?: readonly X509Certificate[]
  /** The confidential-VM variants: the pinned vendor root and the operator's minimums. */
  cvm?: CvmValidationPolicy
  /** The time certificate validity is checked at; the clock by default. */
  now?: () => Date
}
