/**
 * The vTPM attestation document, JSON as Constellation's Go code writes it: Go field names at the top,
 * go-tpm-tools' snake_case Attestation inside, []byte as standard base64. tpm-ek adds two top-level
 * fields (EndorsementKeyCertificates, ActivationProof); without them the bytes are qemu-vtpm's.
 */
import { TPM_ALG } from '../tpm/index.js'
import { jsonFields } from './json-fields.js'

export interface QuoteEntry {
  quote: Buffer
  rawSig: Buffer
  /** TPM_ALG of the PCR bank. */
  hashAlg: number
  pcrs: Map<number, Buffer>
}

export interface AttestationDocument {
  akPub: Buffer
  quotes: QuoteEntry[]
  eventLog?: Buffer
  instanceInfo?: Buffer
  userData: Buffer
  /** tpm-ek: DER, the EK certificate first, then intermediates. */
  ekCertificates?: Buffer[]
  /** tpm-ek, join direction: the credential the node activated for the verifier's challenge. */
  activationProof?: Buffer
}

const MAX_DOCUMENT_BYTES = 1 << 20
const MAX_QUOTES = 4
/** A credential is at most a digest (SHA-512: 64 bytes). */
const MAX_ACTIVATION_PROOF_BYTES = 64

const { malformed, parse, object, bytes, certificates } = jsonFields('attestation document')

export function encodeDocument(doc: AttestationDocument): Buffer {
  const b64 = (b: Buffer) => b.toString('base64')
  const json = {
    Attestation: {
      ak_pub: b64(doc.akPub),
      quotes: doc.quotes.map((q) => ({
        quote: b64(q.quote),
        raw_sig: b64(q.rawSig),
        pcrs: { hash: q.hashAlg, pcrs: Object.fromEntries([...q.pcrs].map(([i, v]) => [String(i), b64(v)])) },
      })),
      ...(doc.eventLog ? { event_log: b64(doc.eventLog) } : {}),
      TeeAttestation: null,
    },
    InstanceInfo: doc.instanceInfo ? b64(doc.instanceInfo) : null,
    UserData: b64(doc.userData),
    ...(doc.ekCertificates ? { EndorsementKeyCertificates: doc.ekCertificates.map(b64) } : {}),
    ...(doc.activationProof ? { ActivationProof: b64(doc.activationProof) } : {}),
  }
  return Buffer.from(JSON.stringify(json))
}

/** Parses and shape-checks a document; every problem names the JSON path. */
export function decodeDocument(raw: Buffer): AttestationDocument {
  const json = parse(raw, MAX_DOCUMENT_BYTES)
  const top = object(json, 'document')
  const att = object(top.Attestation, 'Attestation')
  const quotesRaw = att.quotes
  if (!Array.isArray(quotesRaw) || quotesRaw.length === 0)
    throw malformed('Attestation.quotes', 'must be a non-empty list')
  if (quotesRaw.length > MAX_QUOTES)
    throw malformed('Attestation.quotes', `has more than ${MAX_QUOTES} entries`)
  const quotes = quotesRaw.map((q: unknown, i) => decodeQuote(q, `Attestation.quotes[${i}]`))
  return {
    akPub: bytes(att.ak_pub, 'Attestation.ak_pub'),
    quotes,
    eventLog:
      att.event_log === undefined || att.event_log === null
        ? undefined
        : bytes(att.event_log, 'Attestation.event_log'),
    instanceInfo:
      top.InstanceInfo === null || top.InstanceInfo === undefined
        ? undefined
        : bytes(top.InstanceInfo, 'InstanceInfo'),
    userData: bytes(top.UserData, 'UserData'),
    ekCertificates: absent(top.EndorsementKeyCertificates)
      ? undefined
      : certificates(top.EndorsementKeyCertificates, 'EndorsementKeyCertificates'),
    activationProof: absent(top.ActivationProof)
      ? undefined
      : bytes(top.ActivationProof, 'ActivationProof', { min: 1, max: MAX_ACTIVATION_PROOF_BYTES }),
  }
}

const absent = (v: unknown) => v === undefined || v === null

function decodeQuote(value: unknown, path: string): QuoteEntry {
  const q = object(value, path)
  const pcrsObj = object(q.pcrs, `${path}.pcrs`)
  const hashAlg = pcrsObj.hash
  if (hashAlg !== TPM_ALG.SHA1 && hashAlg !== TPM_ALG.SHA256 && hashAlg !== TPM_ALG.SHA384)
    throw malformed(`${path}.pcrs.hash`, `${JSON.stringify(hashAlg)} is not a known PCR bank (4, 11 or 12)`)
  const values = object(pcrsObj.pcrs, `${path}.pcrs.pcrs`)
  const pcrs = new Map<number, Buffer>()
  for (const [key, v] of Object.entries(values)) {
    if (!/^(?:[0-9]|1[0-9]|2[0-3])$/.test(key))
      throw malformed(`${path}.pcrs.pcrs`, `key ${JSON.stringify(key)} is not a PCR index 0-23`)
    pcrs.set(Number(key), bytes(v, `${path}.pcrs.pcrs.${key}`))
  }
  return {
    quote: bytes(q.quote, `${path}.quote`),
    rawSig: bytes(q.raw_sig, `${path}.raw_sig`),
    hashAlg,
    pcrs,
  }
}
