/**
 * tpm-ek: qemu-vtpm's quote, with the AK anchored in the TPM's manufacturer. The document carries
 * the EK certificate (and intermediates), which must chain to the operator's manufacturer roots;
 * the quote counts only once the node has activated a credential made for that EK and the AK's
 * Name (TPM2_MakeCredential / TPM2_ActivateCredential), which only the TPM holding both can do.
 */
import { randomBytes, timingSafeEqual, type X509Certificate } from 'node:crypto'
import { CliError } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import {
  activateCredential,
  EkCertificateMissingError,
  makeCredential,
  objectName,
  readEkCertificate,
  readEkCertificateChain,
  TPMA_OBJECT,
  withAttestationKey,
  withEndorsementKey,
  withTpm,
  type EkKind,
  type MadeCredential,
  type OpenTpm,
  type TpmtPublic,
} from '../tpm/index.js'
import {
  activationRequestFields,
  decodeActivationRequest,
  encodeActivationRequest,
} from './activation-request.js'
import { decodeDocument, encodeDocument, type AttestationDocument } from './document.js'
import { checkManufacturerRoots, parseEkCertificates, verifiedEkPublicKey } from './ek-chain.js'
import { AttestationError } from './errors.js'
import { jsonFields, MAX_EK_CERTIFICATES } from './json-fields.js'
import type { Measurements } from './measurements.js'
import type {
  ActivationChallenge,
  ActivationExpectation,
  Issuer,
  IssuerOptions,
  ValidationResult,
  Validator,
  ValidatorOptions,
} from './types.js'
import { VARIANT_OIDS } from './variant.js'
import {
  attestationKeyOf,
  checkMeasurements,
  checkSha256Quote,
  issueQuoteDocument,
  parseOrRefuse,
} from './vtpm-quote.js'

/** Bytes of the secret a challenge wraps: fits every EK's nameAlg digest (SHA-256 and up). */
export const ACTIVATION_SECRET_BYTES = 32

export interface TpmEkIssuer extends Issuer {
  activate(made: MadeCredential): Promise<Buffer>
  activationRequest(): Promise<Buffer>
}

export interface TpmEkValidator extends Validator {
  challengeActivation(request: Buffer): Promise<ActivationChallenge>
}

interface EkCertificates {
  kind: EkKind
  /** The EK certificate, then the intermediates from the TPM's chain indices. */
  ders: Buffer[]
}

export function createTpmEkIssuer(open: OpenTpm, opts: IssuerOptions = {}): TpmEkIssuer {
  // NV holds them for the TPM's life: read once, but a failed read is tried again next time
  let cached: Promise<EkCertificates> | undefined
  const ekCertificates = () =>
    (cached ??= readEkCertificates(open).catch((err: unknown) => {
      cached = undefined
      throw err
    }))
  return {
    variant: 'tpm-ek',
    oid: VARIANT_OIDS['tpm-ek'],
    async issue(userData, nonce, activationProof) {
      const { ders } = await ekCertificates()
      const doc = await issueQuoteDocument(open, userData, nonce, opts)
      return encodeDocument({ ...doc, ekCertificates: ders, activationProof })
    },
    async activate(made) {
      const { kind } = await ekCertificates()
      return withTpm(open, (t) =>
        withEndorsementKey(t, kind, (ek) =>
          withAttestationKey(t, (ak) => activateCredential(t, ak, ek, made)),
        ),
      )
    },
    async activationRequest() {
      const { ders } = await ekCertificates()
      const akPub = await withTpm(open, (t) => withAttestationKey(t, async (ak) => ak.publicArea))
      return encodeActivationRequest({ ekCertificates: ders, akPub })
    },
  }
}

/**
 * ECC first: every activation derives the EK again, which takes a TPM a few milliseconds for an ECC
 * key and ~40 ms for RSA 2048 (swtpm), inside every tpm-ek handshake's budget (DESIGN: ≤ 30 ms).
 */
const EK_PREFERENCE: readonly EkKind[] = ['eccP256', 'eccP384', 'rsa2048']

/** The first EK certificate in EK_PREFERENCE's order. */
function readEkCertificates(open: OpenTpm): Promise<EkCertificates> {
  return withTpm(open, async (t) => {
    for (const kind of EK_PREFERENCE) {
      let cert: Buffer
      try {
        cert = await readEkCertificate(t, kind)
      } catch (err: unknown) {
        if (err instanceof EkCertificateMissingError) continue
        throw err
      }
      return { kind, ders: [cert, ...(await readEkCertificateChain(t, MAX_EK_CERTIFICATES - 1))] }
    }
    throw new CliError(
      'the TPM has no EK certificate (RSA 2048, ECC P-256 or P-384); tpm-ek attestation needs one',
      {
        hint: 'use a TPM provisioned with an EK certificate by its manufacturer (swtpm: swtpm_setup --create-ek-cert), or the qemu-vtpm attestation variant',
      },
    )
  })
}

const documentFields = jsonFields('attestation document')

export function createTpmEkValidator(
  measurements: Measurements,
  roots: readonly X509Certificate[],
  log?: Logger,
  opts: Pick<ValidatorOptions, 'now'> = {},
): TpmEkValidator {
  checkManufacturerRoots(roots)
  const now = opts.now ?? (() => new Date())
  return {
    variant: 'tpm-ek',
    oid: VARIANT_OIDS['tpm-ek'],
    async validate(raw, nonce, expected): Promise<ValidationResult> {
      const doc = decodeDocument(raw)
      if (!doc.ekCertificates)
        throw new AttestationError(
          'tpm-ek attestation document carries no EndorsementKeyCertificates: the node attests with another variant',
        )
      const certs = parseEkCertificates(doc.ekCertificates, documentFields)
      const ek = verifiedEkPublicKey(certs, roots, now(), documentFields)
      const ak = attestationKeyOf(doc.akPub)
      requireTpmBoundKey(ak)
      const akName = parseOrRefuse(() => objectName(doc.akPub), 'Attestation.ak_pub')
      const entry = checkSha256Quote(doc, ak, nonce)
      if (expected) checkActivationProof(doc, akName, expected)
      const warnings = checkMeasurements(measurements, entry.pcrs, log)
      return {
        userData: doc.userData,
        pcrs: entry.pcrs,
        warnings,
        akName,
        activation: { ek, akName, proven: expected !== undefined },
        ...(entry.eventLog && { eventLog: entry.eventLog }),
      }
    },
    async challengeActivation(request) {
      const req = decodeActivationRequest(request)
      const what = 'activation request'
      const certs = parseEkCertificates(req.ekCertificates, activationRequestFields)
      const ek = verifiedEkPublicKey(certs, roots, now(), activationRequestFields)
      requireTpmBoundKey(attestationKeyOf(req.akPub, 'AkPub', what))
      const akName = parseOrRefuse(() => objectName(req.akPub), 'AkPub', what)
      const secret = randomBytes(ACTIVATION_SECRET_BYTES)
      const made = parseOrRefuse(() => makeCredential(ek, akName, secret), 'AkPub', what)
      return { made, expected: { secret, akName } }
    },
  }
}

/**
 * Activation proves the AK's Name is loaded in the TPM holding the EK; only a key that can never
 * leave that TPM (fixedTPM, fixedParent) turns that into "this TPM signed the quote".
 */
function requireTpmBoundKey(ak: TpmtPublic): void {
  const missing = (['fixedTPM', 'fixedParent'] as const).filter((a) => (ak.attributes & TPMA_OBJECT[a]) === 0)
  if (missing.length > 0)
    throw new AttestationError(
      `attestation key lacks ${missing.join(' and ')}: a key that can leave its TPM proves nothing by credential activation`,
    )
}

function checkActivationProof(
  doc: AttestationDocument,
  akName: Buffer,
  expected: ActivationExpectation,
): void {
  const proof = doc.activationProof
  if (!proof)
    throw new AttestationError(
      'credential activation: the document carries no ActivationProof, but this node was challenged to activate a credential',
    )
  if (!akName.equals(expected.akName))
    throw new AttestationError(
      'credential activation: the quoting attestation key is not the one the credential was made for (another AK or another TPM)',
    )
  if (proof.length !== expected.secret.length || !timingSafeEqual(proof, expected.secret))
    throw new AttestationError(
      "credential activation: ActivationProof is not this challenge's secret (a replayed or forged activation)",
    )
}
