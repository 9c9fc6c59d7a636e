/**
 * A fake attestation authority for aTLS tests that need no swtpm. Its issuer and validator implement
 * the same Issuer / Validator interfaces as the qemu-vtpm ones: the issuer signs a small JSON document
 * (userData = the TLS key hash, the verifier's nonce, PCR values, issue time) with an in-memory
 * Ed25519 key; the validator checks that signature, the nonce, the document's age and the
 * measurements. The issuer can be told to lie in one way, to play a faulty or malicious node.
 */
import { createHash, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto'
import {
  AttestationError,
  compareMeasurements,
  type Issuer,
  type Measurements,
  type Validator,
} from '../../src/lib/attestation/index.js'

/** What the fake issuer gets wrong; 'none' issues an honest document. */
export type FakeFault = 'none' | 'wrong-nonce' | 'wrong-measurements' | 'expired' | 'swapped-key'

/** A private OID arc, so no real validator ever accepts a fake document by mistake. */
export const FAKE_ATTESTATION_OID = '1.3.9900.99.1'
/** A fake document older than this is refused as expired (stands in for a TEE report's lifetime). */
export const FAKE_DOCUMENT_MAX_AGE_MS = 5 * 60_000

export interface FakeAttestation {
  /** `akName`: the TPM identity its documents carry (ValidationResult.akName); one shared default. */
  issuer(fault?: FakeFault, akName?: Buffer): Issuer
  validator(): Validator
  /** The PCR values an honest fake node reports, as enforced measurements. */
  readonly measurements: Measurements
}

interface FakeDocument {
  akName: string
  userData: string
  nonce: string
  pcrs: Record<string, string>
  issuedAt: number
}

const sha256 = (s: string) => createHash('sha256').update(s).digest()
const GOLDEN_PCRS = new Map<number, Buffer>([
  [4, sha256('fake boot loader')],
  [9, sha256('fake kernel command line and initrd')],
  [15, Buffer.alloc(32)],
])

/** One authority: its issuers' documents verify only with its own validator (its own key pair). */
export function createFakeAttestation(now: () => number = Date.now): FakeAttestation {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const measurements: Measurements = new Map(
    [...GOLDEN_PCRS].map(([i, v]) => [i, { expected: v, warnOnly: false }]),
  )
  return {
    measurements,
    issuer: (fault = 'none', akName = DEFAULT_FAKE_AK_NAME) => fakeIssuer(privateKey, fault, now, akName),
    validator: () => fakeValidator(publicKey, measurements, now),
  }
}

/** nameAlg SHA-256 (0x000b) and a digest, as a TPM object's Name. */
export const DEFAULT_FAKE_AK_NAME = Buffer.concat([Buffer.from([0, 0x0b]), sha256('fake attestation key')])

function fakeIssuer(key: KeyObject, fault: FakeFault, now: () => number, akName: Buffer): Issuer {
  return {
    // the Issuer type admits only the one real variant; the distinct OID is what tells them apart
    variant: 'qemu-vtpm',
    oid: FAKE_ATTESTATION_OID,
    issue: async (userData, nonce) => {
      const pcrs = new Map(GOLDEN_PCRS)
      if (fault === 'wrong-measurements') pcrs.set(9, sha256('tampered initrd'))
      const doc: FakeDocument = {
        akName: akName.toString('hex'),
        userData: (fault === 'swapped-key' ? sha256('another TLS key') : userData).toString('base64'),
        nonce: (fault === 'wrong-nonce' ? sha256('another verifier nonce') : nonce).toString('base64'),
        pcrs: Object.fromEntries([...pcrs].map(([i, v]) => [String(i), v.toString('hex')])),
        issuedAt: fault === 'expired' ? now() - 2 * FAKE_DOCUMENT_MAX_AGE_MS : now(),
      }
      const body = Buffer.from(JSON.stringify(doc))
      const envelope = { body: body.toString('base64'), signature: sign(null, body, key).toString('base64') }
      return Buffer.from(JSON.stringify(envelope))
    },
  }
}

function fakeValidator(key: KeyObject, measurements: Measurements, now: () => number): Validator {
  return {
    variant: 'qemu-vtpm',
    oid: FAKE_ATTESTATION_OID,
    validate: async (raw, nonce) => {
      const doc = openEnvelope(raw, key)
      if (!Buffer.from(doc.nonce, 'base64').equals(nonce))
        throw new AttestationError(
          'fake attestation: document is bound to another nonce (replayed or made for another verifier)',
        )
      const age = now() - doc.issuedAt
      if (age > FAKE_DOCUMENT_MAX_AGE_MS || age < -FAKE_DOCUMENT_MAX_AGE_MS)
        throw new AttestationError(
          `fake attestation: document expired (issued ${new Date(doc.issuedAt).toISOString()}, older than ${FAKE_DOCUMENT_MAX_AGE_MS} ms)`,
        )
      const pcrs = new Map(Object.entries(doc.pcrs).map(([i, v]) => [Number(i), Buffer.from(v, 'hex')]))
      const { errors, warnings } = compareMeasurements(measurements, pcrs)
      if (errors.length > 0)
        throw new AttestationError(`measurement validation failed:\n${errors.join('\n')}`)
      return {
        userData: Buffer.from(doc.userData, 'base64'),
        pcrs,
        warnings,
        akName: Buffer.from(doc.akName, 'hex'),
      }
    },
  }
}

function openEnvelope(raw: Buffer, key: KeyObject): FakeDocument {
  let envelope: { body?: unknown; signature?: unknown }
  try {
    envelope = JSON.parse(raw.toString('utf8')) as typeof envelope
  } catch {
    throw new AttestationError('fake attestation: document is not JSON')
  }
  if (typeof envelope.body !== 'string' || typeof envelope.signature !== 'string')
    throw new AttestationError('fake attestation: document lacks body or signature')
  const body = Buffer.from(envelope.body, 'base64')
  if (!verify(null, body, key, Buffer.from(envelope.signature, 'base64')))
    throw new AttestationError('fake attestation: signature does not verify with the authority key')
  return JSON.parse(body.toString('utf8')) as FakeDocument
}
