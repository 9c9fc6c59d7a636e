/**
 * qemu-vtpm issuer and validator. As in Constellation, the AK is trusted as presented (no CA chain,
 * no instance info): the checks are the quote signature, its binding to userData and the verifier's
 * nonce, the PCR digest, and the measurements. Nothing proves the quote came from real hardware.
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import type { Logger } from '../system/index.js'
import {
  PCR_COUNT,
  TPM_ALG,
  TpmParseError,
  parsePublic,
  parseQuoteAttest,
  parseSignature,
  pcrRead,
  quote,
  TPMA_OBJECT,
  verifyTpmSignature,
  withAttestationKey,
  withTpm,
  type OpenTpm,
  type TpmtPublic,
} from '../tpm/index.js'
import { decodeDocument, encodeDocument, type AttestationDocument, type QuoteEntry } from './document.js'
import { AttestationError } from './errors.js'
import { compareMeasurements, type Measurements } from './measurements.js'
import { VARIANT_OIDS } from './variant.js'

export interface Issuer {
  readonly variant: 'qemu-vtpm'
  readonly oid: string
  issue(userData: Buffer, nonce: Buffer): Promise<Buffer>
}
export interface ValidationResult {
  userData: Buffer
  pcrs: Map<number, Buffer>
  warnings: string[]
}
export interface Validator {
  readonly variant: 'qemu-vtpm'
  readonly oid: string
  validate(document: Buffer, nonce: Buffer): Promise<ValidationResult>
}

export interface IssuerOptions {
  /** TCG event log (securityfs binary_bios_measurements); attached when the file exists. */
  eventLogPath?: string
}

const ALL_PCRS = Array.from({ length: PCR_COUNT }, (_, i) => i)
const sha256 = (...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest()

/** extraData = SHA256(userData ‖ nonce); the TPM signs SHA256(instanceInfo ‖ extraData) (instanceInfo empty here). */
export function qualifyingData(
  userData: Buffer,
  nonce: Buffer,
  instanceInfo: Buffer = Buffer.alloc(0),
): Buffer {
  return sha256(instanceInfo, sha256(userData, nonce))
}

export function createQemuVtpmIssuer(open: OpenTpm, opts: IssuerOptions = {}): Issuer {
  return {
    variant: 'qemu-vtpm',
    oid: VARIANT_OIDS['qemu-vtpm'],
    async issue(userData, nonce) {
      const { akPub, q, pcrs } = await withTpm(open, (t) =>
        withAttestationKey(t, async (ak) => {
          const q = await quote(t, ak.handle, qualifyingData(userData, nonce), ALL_PCRS)
          return { akPub: ak.publicArea, q, pcrs: await pcrRead(t, ALL_PCRS) }
        }),
      )
      const doc: AttestationDocument = {
        akPub,
        quotes: [{ quote: q.quoted, rawSig: q.signature, hashAlg: TPM_ALG.SHA256, pcrs }],
        eventLog: opts.eventLogPath ? await readFile(opts.eventLogPath).catch(() => undefined) : undefined,
        userData,
      }
      return encodeDocument(doc)
    },
  }
}

export function createQemuVtpmValidator(measurements: Measurements, log?: Logger): Validator {
  return {
    variant: 'qemu-vtpm',
    oid: VARIANT_OIDS['qemu-vtpm'],
    async validate(raw, nonce) {
      const doc = decodeDocument(raw)
      const ak = parseOrRefuse(() => parsePublic(doc.akPub), 'Attestation.ak_pub')
      requireRestrictedSigningKey(ak)
      const entry = doc.quotes.find((q) => q.hashAlg === TPM_ALG.SHA256)
      if (!entry) throw new AttestationError('attestation has no quote over the SHA-256 PCR bank')
      checkQuote(entry, ak, qualifyingData(doc.userData, nonce, doc.instanceInfo))
      const { errors, warnings } = compareMeasurements(measurements, entry.pcrs)
      for (const w of warnings) log?.warn(w)
      if (errors.length > 0)
        throw new AttestationError(`measurement validation failed:\n${errors.join('\n')}`)
      return { userData: doc.userData, pcrs: entry.pcrs, warnings }
    },
  }
}

function checkQuote(entry: QuoteEntry, ak: TpmtPublic, expectedNonce: Buffer): void {
  const sig = parseOrRefuse(() => parseSignature(entry.rawSig), 'raw_sig')
  const valid = parseOrRefuse(() => verifyTpmSignature(ak, entry.quote, sig), 'raw_sig')
  if (!valid)
    throw new AttestationError(
      'bad signature: the quote signature does not verify with the attestation key (tampered quote or swapped AK)',
    )
  const attest = parseOrRefuse(() => parseQuoteAttest(entry.quote), 'quote')
  if (!attest.extraData.equals(expectedNonce))
    throw new AttestationError(
      "quote is not bound to this nonce and key: replayed document, another verifier's nonce, or userData changed",
    )
  const selected = attest.pcrSelections.filter((s) => s.pcrs.length > 0)
  const pcrs = selected[0]?.pcrs ?? []
  const reported = [...entry.pcrs.keys()].sort((a, b) => a - b)
  if (
    selected.length !== 1 ||
    selected[0]?.hashAlg !== TPM_ALG.SHA256 ||
    pcrs.join(',') !== reported.join(',')
  )
    throw new AttestationError(
      `quoted PCR selection [${pcrs.join(',')}] does not match the reported PCRs [${reported.join(',')}]`,
    )
  const digest = sha256(...reported.map((i) => entry.pcrs.get(i) ?? Buffer.alloc(0)))
  if (!digest.equals(attest.pcrDigest)) {
    throw new AttestationError(
      'quoted PCR digest does not match the reported PCR values (a PCR value was changed after quoting)',
    )
  }
}

function requireRestrictedSigningKey(ak: TpmtPublic): void {
  const { restricted: RESTRICTED, sign: SIGN } = TPMA_OBJECT
  // only a restricted key guarantees that the TPM itself built the TPMS_ATTEST it signed
  if ((ak.attributes & (RESTRICTED | SIGN)) !== (RESTRICTED | SIGN))
    throw new AttestationError('attestation key is not a restricted signing key')
}

function parseOrRefuse<T>(fn: () => T, field: string): T {
  try {
    return fn()
  } catch (err: unknown) {
    if (err instanceof TpmParseError)
      throw new AttestationError(`malformed attestation document: ${field}: ${err.message}`, { cause: err })
    throw err
  }
}
