/**
 * Manufacturer CA certificates as config files list them: PEM text inline, or a file holding PEM
 * (one or more certificates) or one DER certificate, as manufacturers publish them. Read
 * synchronously: config parsing is synchronous and these files are small.
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'

export const MAX_TRUST_ROOT_FILE_BYTES = 1024 * 1024
/** A bundle of every manufacturer's roots and intermediates is a few dozen certificates. */
const MAX_CERTIFICATES_PER_ENTRY = 100

/** What is wrong with one entry; the caller adds where the entry is (`attestation.tpmEK.roots.0`). */
export class TrustRootError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TrustRootError'
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g
const HINT = 'give PEM text (-----BEGIN CERTIFICATE-----) or the path of a PEM or DER certificate file'

/** `entry` is PEM text when it holds a PEM header, else a path relative to `baseDir`. */
export function readTrustRoots(entry: string, baseDir: string): X509Certificate[] {
  return checkCas(readCertificates(entry, baseDir))
}

/** readTrustRoots without the CA check: for a signer (a VCEK, a VLEK) given beside its chain. */
export function readCertificates(entry: string, baseDir: string): X509Certificate[] {
  if (entry.trim() === '') throw new TrustRootError(`is empty; ${HINT}`)
  if (entry.includes('-----BEGIN')) return parsePem(entry, 'the PEM text')
  const file = path.resolve(baseDir, entry)
  let data: Buffer
  try {
    const stat = statSync(file)
    if (!stat.isFile()) throw new TrustRootError(`${file} is not a regular file; ${HINT}`)
    if (stat.size > MAX_TRUST_ROOT_FILE_BYTES)
      throw new TrustRootError(`${file} is ${stat.size} bytes, more than ${MAX_TRUST_ROOT_FILE_BYTES}`)
    data = readFileSync(file)
  } catch (err: unknown) {
    if (err instanceof TrustRootError) throw err
    throw new TrustRootError(`reading ${file}: ${err instanceof Error ? err.message : String(err)}; ${HINT}`)
  }
  const text = data.toString('latin1')
  return text.includes('-----BEGIN') ? parsePem(text, file) : [parseDer(data, file)]
}

function parsePem(text: string, where: string): X509Certificate[] {
  const blocks = [...text.matchAll(PEM_BLOCK)]
  const other = blocks.find((b) => b[1] !== 'CERTIFICATE')
  if (other) throw new TrustRootError(`${where} holds a PEM ${other[1]} block, which is not a certificate`)
  if (blocks.length === 0)
    throw new TrustRootError(`${where} holds no complete PEM CERTIFICATE block; ${HINT}`)
  if (blocks.length > MAX_CERTIFICATES_PER_ENTRY)
    throw new TrustRootError(
      `${where} holds ${blocks.length} certificates, more than ${MAX_CERTIFICATES_PER_ENTRY}`,
    )
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b[0])
    } catch (err: unknown) {
      const which = blocks.length > 1 ? `certificate ${i + 1} in ${where}` : where
      throw new TrustRootError(
        `${which} is not a PEM certificate (${err instanceof Error ? err.message : String(err)})`,
      )
    }
  })
}

function parseDer(data: Buffer, file: string): X509Certificate {
  try {
    if (data[0] !== 0x30) throw new Error('does not start with a DER SEQUENCE')
    const cert = new X509Certificate(data)
    if (!cert.raw.equals(data)) throw new Error('bytes follow the certificate')
    return cert
  } catch (err: unknown) {
    throw new TrustRootError(
      `${file} is neither a PEM nor a DER certificate (${err instanceof Error ? err.message : String(err)})`,
    )
  }
}

// an EK certificate pinned as a "root" would sign nothing; say so here rather than at every join
function checkCas(certs: X509Certificate[]): X509Certificate[] {
  for (const cert of certs)
    if (!cert.ca)
      throw new TrustRootError(
        // Node gives no subject (undefined, though typed string) for an empty name
        `${(cert.subject ?? '').split('\n').join(', ') || 'a certificate with an empty subject'} is not a CA certificate (basicConstraints CA:TRUE); list the manufacturer's root or intermediate CA certificates`,
      )
  return certs
}
