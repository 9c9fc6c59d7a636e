/** Certificates as evidence carries them: PEM text with one or more blocks, each returned as DER. */
import { AttestationError } from '../errors.js'

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]*?)-----END CERTIFICATE-----/g
const MAX_CERTIFICATES = 8

export function pemBlocks(pem: Buffer): Buffer[] {
  const text = pem.toString('latin1')
  const blocks = [...text.matchAll(PEM_CERTIFICATE)].map((m) =>
    Buffer.from((m[1] ?? '').replace(/\s/g, ''), 'base64'),
  )
  if (blocks.length > MAX_CERTIFICATES)
    throw new AttestationError(
      `certificate chain holds ${blocks.length} certificates, more than ${MAX_CERTIFICATES}`,
    )
  if (blocks.length === 0 && text.trim() !== '')
    throw new AttestationError('certificate chain is not PEM (no -----BEGIN CERTIFICATE----- block)')
  return blocks
}
