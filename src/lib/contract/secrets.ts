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

const TOKEN_ID = '[a-z0-9]{6}'
const TOKEN_SECRET = '[a-z0-9]{16}'
/** kubeadm's bootstrap token, `<id>.<secret>`: the ID names its Secret, the secret authenticates. */
export const BOOTSTRAP_TOKEN_PATTERN = new RegExp(`^(${TOKEN_ID})\\.(${TOKEN_SECRET})$`)
/** A bootstrap token's ID alone (what may be named in argv: the secret never is). */
export const BOOTSTRAP_TOKEN_ID_PATTERN = new RegExp(`^${TOKEN_ID}$`)
/** A token anywhere in a text (kubeadm's output), as a regular expression's source, for redaction. */
export const BOOTSTRAP_TOKEN_IN_TEXT = `\\b${TOKEN_ID}\\.${TOKEN_SECRET}\\b`

/**
 * A disk UUID as keys are derived for it (`key-<uuid>`) and recorded: lower case, because blkid and
 * the metadata may spell the same disk in either case and a different spelling is a different key.
 */
export const canonicalDiskUuid = (uuid: string): string => uuid.toLowerCase()
