/** Reading untrusted JSON (attestation documents, activation requests): every problem names its JSON path. */
import { AttestationError } from './errors.js'

/** A TPM's EK certificate plus its intermediates; a manufacturer chain is rarely deeper than 3. */
export const MAX_EK_CERTIFICATES = 4
/** An EK certificate is about 1 KiB; 8 KiB leaves room for long extensions, not for abuse. */
export const MAX_EK_CERTIFICATE_BYTES = 8 * 1024

export interface JsonFields {
  malformed(path: string, why: string): AttestationError
  /** UTF-8 JSON of at most maxBytes. */
  parse(raw: Buffer, maxBytes: number): unknown
  object(value: unknown, path: string): Record<string, unknown>
  /** Standard base64 with padding. */
  bytes(value: unknown, path: string, bounds?: { min?: number; max?: number }): Buffer
  /** EndorsementKeyCertificates: 1 to MAX_EK_CERTIFICATES base64 DER certificates, EK first. */
  certificates(value: unknown, path: string): Buffer[]
}

/** `what` starts every message: "malformed <what>: <path> <why>". */
export function jsonFields(what: string): JsonFields {
  const malformed = (path: string, why: string) => new AttestationError(`malformed ${what}: ${path} ${why}`)
  const fields: JsonFields = {
    malformed,
    parse(raw, maxBytes) {
      if (raw.length > maxBytes) throw malformed('document', `is ${raw.length} bytes, more than ${maxBytes}`)
      try {
        return JSON.parse(raw.toString('utf8')) as unknown
      } catch (err: unknown) {
        throw malformed('document', `is not JSON (${err instanceof Error ? err.message : String(err)})`)
      }
    },
    object(value, path) {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw malformed(path, 'must be an object')
      return value as Record<string, unknown>
    },
    bytes(value, path, bounds = {}) {
      if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0)
        throw malformed(path, 'must be standard base64')
      const out = Buffer.from(value, 'base64')
      if (bounds.min !== undefined && out.length < bounds.min)
        throw malformed(path, `is ${out.length} bytes, fewer than ${bounds.min}`)
      if (bounds.max !== undefined && out.length > bounds.max)
        throw malformed(path, `is ${out.length} bytes, more than ${bounds.max}`)
      return out
    },
    certificates(value, path) {
      if (!Array.isArray(value) || value.length === 0)
        throw malformed(path, 'must be a non-empty list (the EK certificate first, then intermediates)')
      if (value.length > MAX_EK_CERTIFICATES)
        throw malformed(path, `has ${value.length} entries, more than ${MAX_EK_CERTIFICATES}`)
      return value.map((v: unknown, i) =>
        fields.bytes(v, `${path}[${i}]`, { min: 1, max: MAX_EK_CERTIFICATE_BYTES }),
      )
    },
  }
  return fields
}
