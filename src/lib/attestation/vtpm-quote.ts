/**
 * The quote every vTPM-style variant carries (qemu-vtpm, tpm-ek): issuing it with the deterministic
 * endorsement-hierarchy AK, and checking its signature, its binding to (userData, nonce), the PCR
 * digest and the measurements. What a variant trusts the AK for is the variant's own business.
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
  readPublicArea,
  TPMA_OBJECT,
  verifyTpmSignature,
  withAttestationKey,
  withTpm,
  type OpenTpm,
  type TpmTransport,
  type TpmtPublic,
} from '../tpm/index.js'
import type { AttestationDocument, QuoteEntry } from './document.js'
import { AttestationError } from './errors.js'
import { replayEventLog, type EventLogReplay } from './eventlog/replay.js'
import { compareMeasurements, type Measurements } from './measurements.js'
import type { IssuerOptions } from './types.js'

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

/** What a CVM variant adds to the quote: evidence the quote commits to, and the key that quotes. */
export interface QuoteExtras {
  /** InstanceInfo for this AK (its TPMT_PUBLIC); the quote's qualifying data commits to it. */
  instanceInfo?: (akPub: Buffer) => Promise<Buffer>
  /** A persistent key's handle to quote with instead of the derived AK (Azure's HCL AK). */
  key?: number
}

/** A quote of all SHA-256 PCRs bound to (userData, nonce), as Constellation's qemu-vtpm document holds it. */
export async function issueQuoteDocument(
  open: OpenTpm,
  userData: Buffer,
  nonce: Buffer,
  opts: IssuerOptions,
  extras: QuoteExtras = {},
): Promise<AttestationDocument> {
  const quoteWith = async (t: TpmTransport, handle: number, akPub: Buffer) => {
    const instanceInfo = extras.instanceInfo ? await extras.instanceInfo(akPub) : undefined
    const q = await quote(t, handle, qualifyingData(userData, nonce, instanceInfo), ALL_PCRS)
    return { akPub, q, pcrs: await pcrRead(t, ALL_PCRS), instanceInfo }
  }
  const persistent = extras.key
  const { akPub, q, pcrs, instanceInfo } = await withTpm(open, async (t) =>
    persistent === undefined
      ? withAttestationKey(t, (ak) => quoteWith(t, ak.handle, ak.publicArea))
      : quoteWith(t, persistent, await readPublicArea(t, persistent)),
  )
  return {
    akPub,
    quotes: [{ quote: q.quoted, rawSig: q.signature, hashAlg: TPM_ALG.SHA256, pcrs }],
    eventLog: opts.eventLogPath ? await readFile(opts.eventLogPath).catch(() => undefined) : undefined,
    instanceInfo,
    userData,
  }
}

/** The AK's TPMT_PUBLIC (`field` names it in errors), refused unless it is a restricted signing key. */
export function attestationKeyOf(
  akPub: Buffer,
  field = 'Attestation.ak_pub',
  what = 'attestation document',
): TpmtPublic {
  const ak = parseOrRefuse(() => parsePublic(akPub), field, what)
  const { restricted: RESTRICTED, sign: SIGN } = TPMA_OBJECT
  // only a restricted key guarantees that the TPM itself built the TPMS_ATTEST it signed
  if ((ak.attributes & (RESTRICTED | SIGN)) !== (RESTRICTED | SIGN))
    throw new AttestationError('attestation key is not a restricted signing key')
  return ak
}

/**
 * The SHA-256 quote, checked against the AK, the verifier's nonce and the reported PCR values; the
 * event log, when the document carries one, must replay to the quoted PCRs it has events for. A
 * document without a log is not refused (nodes without securityfs exist): `eventLog` stays unset.
 */
export function checkSha256Quote(
  doc: AttestationDocument,
  ak: TpmtPublic,
  nonce: Buffer,
): QuoteEntry & { eventLog?: EventLogReplay } {
  const entry = doc.quotes.find((q) => q.hashAlg === TPM_ALG.SHA256)
  if (!entry) throw new AttestationError('attestation has no quote over the SHA-256 PCR bank')
  checkQuote(entry, ak, qualifyingData(doc.userData, nonce, doc.instanceInfo))
  // only after the signature: the quoted values are then the TPM's, and the log is checked against them
  if (!doc.eventLog) return entry
  return { ...entry, eventLog: replayEventLog(doc.eventLog, entry.hashAlg, entry.pcrs) }
}

/** Enforced mismatches refuse; warn-only ones are logged and returned. */
export function checkMeasurements(
  measurements: Measurements,
  pcrs: ReadonlyMap<number, Buffer>,
  log?: Logger,
): string[] {
  const { errors, warnings } = compareMeasurements(measurements, pcrs)
  for (const w of warnings) log?.warn(w)
  if (errors.length > 0) throw new AttestationError(`measurement validation failed:\n${errors.join('\n')}`)
  return warnings
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

/** A TPM structure that does not parse makes the document (or `what`) malformed, named by its field. */
export function parseOrRefuse<T>(fn: () => T, field: string, what = 'attestation document'): T {
  try {
    return fn()
  } catch (err: unknown) {
    if (err instanceof TpmParseError)
      throw new AttestationError(`malformed ${what}: ${field}: ${err.message}`, { cause: err })
    throw err
  }
}
