/** KMS and storage URIs as the CLI sends them in the InitRequest (`kms://cluster-kms?key=…&salt=…`). */
import { MASTER_KEY_MIN_BYTES, MASTER_SALT_MIN_BYTES, type MasterSecret } from './master-secret.js'

export const NO_STORE_URI = 'storage://no-store'
const CLUSTER_KMS_HOST = 'cluster-kms'

export class KmsUriError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'KmsUriError'
  }
}

/** URL-safe base64 with padding, as Go's base64.URLEncoding writes it. */
export function clusterKmsUri(secret: MasterSecret): string {
  return `kms://${CLUSTER_KMS_HOST}?key=${urlBase64(secret.key)}&salt=${urlBase64(secret.salt)}`
}

function urlBase64(b: Buffer): string {
  return b.toString('base64').replaceAll('+', '-').replaceAll('/', '_')
}

/** Parses a cluster-KMS URI; the message names what is wrong, never the key itself. */
export function parseClusterKmsUri(uri: string): MasterSecret {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    throw new KmsUriError('KMS URI is not a URL')
  }
  if (url.protocol !== 'kms:')
    throw new KmsUriError(`KMS URI has scheme ${JSON.stringify(url.protocol.slice(0, -1))}, want "kms"`)
  if (url.host !== CLUSTER_KMS_HOST)
    throw new KmsUriError(
      `KMS URI names backend ${JSON.stringify(url.host)}; only "${CLUSTER_KMS_HOST}" is supported`,
    )
  const key = decodeParam(url, 'key')
  const salt = decodeParam(url, 'salt')
  if (key.length < MASTER_KEY_MIN_BYTES)
    throw new KmsUriError(`KMS URI key is ${key.length} bytes, want at least ${MASTER_KEY_MIN_BYTES}`)
  if (salt.length < MASTER_SALT_MIN_BYTES)
    throw new KmsUriError(`KMS URI salt is ${salt.length} bytes, want at least ${MASTER_SALT_MIN_BYTES}`)
  return { key, salt }
}

function decodeParam(url: URL, name: 'key' | 'salt'): Buffer {
  const value = url.searchParams.get(name)
  if (value === null || value === '') throw new KmsUriError(`KMS URI has no ${name} parameter`)
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) throw new KmsUriError(`KMS URI ${name} is not URL-safe base64`)
  return Buffer.from(value, 'base64url')
}
