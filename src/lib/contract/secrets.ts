/**
 * The sizes and shapes of what nodes, the join service and the CLI exchange: checked on one side,
 * produced on the other, so each is spelled once.
 */

/** Constellation's StateDiskKeyLength: the state disk's passphrase, derived per disk. */
export const STATE_DISK_KEY_BYTES = 32
/** The secret PCR 15's measurement is salted with on every node. */
export const MEASUREMENT_SECRET_BYTES = 32
/** Random per cluster, chosen by the CLI at init; node_state.json keeps it. */
export const MEASUREMENT_SALT_BYTES = 32

/** kubeadm's bootstrap token, `<id>.<secret>`: the ID names its Secret, the secret authenticates. */
export const BOOTSTRAP_TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/

/**
 * A disk UUID as keys are derived for it (`key-<uuid>`) and recorded: lower case, because blkid and
 * the metadata may spell the same disk in either case and a different spelling is a different key.
 */
export const canonicalDiskUuid = (uuid: string): string => uuid.toLowerCase()
