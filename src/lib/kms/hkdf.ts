/** Key derivation: HKDF-SHA256 (RFC 5869), the one way every cluster key comes from the master secret. */
import { hkdfSync } from 'node:crypto'
import { canonicalDiskUuid } from '../contract/index.js'

export const DEK_PREFIX = 'key-'
export const DERIVED_KEY_LENGTH = 32
export const MEASUREMENT_SECRET_KEY_ID = 'measurementSecret'
const CLUSTER_ID_INFO = 'key-clusterID'

/** HKDF-SHA256 extract + expand. */
export function deriveKey(
  secret: Uint8Array,
  salt: Uint8Array,
  info: string | Uint8Array,
  length = DERIVED_KEY_LENGTH,
): Buffer {
  const infoBytes = typeof info === 'string' ? Buffer.from(info, 'utf8') : info
  return Buffer.from(hkdfSync('sha256', secret, salt, infoBytes, length))
}

/** The cluster KMS: every data key is HKDF(master key, master salt, "key-" + id). */
export class ClusterKms {
  constructor(
    private readonly masterKey: Buffer,
    private readonly masterSalt: Buffer,
  ) {}

  /** `id` without the `key-` prefix, e.g. a disk UUID or "measurementSecret". */
  deriveDataKey(id: string, length = DERIVED_KEY_LENGTH): Buffer {
    return deriveKey(this.masterKey, this.masterSalt, DEK_PREFIX + id, length)
  }

  /** The state disk's passphrase; the UUID is lower-cased as the InitServer does. */
  diskKey(diskUuid: string): Buffer {
    return this.deriveDataKey(canonicalDiskUuid(diskUuid))
  }

  measurementSecret(): Buffer {
    return this.deriveDataKey(MEASUREMENT_SECRET_KEY_ID)
  }
}

/** clusterID = HKDF(measurementSecret, measurementSalt, "key-clusterID", 32): what PCR 15 binds the node to. */
export function deriveClusterId(measurementSecret: Uint8Array, measurementSalt: Uint8Array): Buffer {
  return deriveKey(measurementSecret, measurementSalt, CLUSTER_ID_INFO)
}
