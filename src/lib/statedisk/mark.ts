/**
 * The state disk's own record of where it is in its life, kept as a LUKS2 token in the header (so
 * it needs no key to read): `{"type": "constellation-state-disk", "keyslots": [], "state": …}`.
 *
 * - `new`: formatted at boot with a random key that only this boot knows; init or join may take it.
 * - `initialized`: init or join re-keyed it with the cluster's disk key; a reboot asks for that key.
 * - `reset`: init or join failed past the node lock; the next boot formats it again.
 */
export const STATE_DISK_TOKEN_TYPE = 'constellation-state-disk'

export const STATE_DISK_MARKS = ['new', 'initialized', 'reset'] as const
export type StateDiskMark = (typeof STATE_DISK_MARKS)[number]

export function encodeMarkToken(mark: StateDiskMark): string {
  return JSON.stringify({ type: STATE_DISK_TOKEN_TYPE, keyslots: [], state: mark })
}

export interface FoundMark {
  /** The token's slot in the header, replaced in place when the mark changes. */
  tokenId: number
  mark: StateDiskMark
}

/**
 * Our token in `cryptsetup luksDump --dump-json-metadata` output; undefined when there is none.
 * A token of our type with an unknown state is an error: guessing could format a cluster's disk.
 */
export function findMark(luksMetadataJson: string): FoundMark | undefined {
  const metadata = JSON.parse(luksMetadataJson) as {
    tokens?: Record<string, { type?: unknown; state?: unknown }>
  }
  for (const [id, token] of Object.entries(metadata.tokens ?? {})) {
    if (token.type !== STATE_DISK_TOKEN_TYPE) continue
    if (!STATE_DISK_MARKS.includes(token.state as StateDiskMark))
      throw new Error(
        `LUKS2 token ${id} (${STATE_DISK_TOKEN_TYPE}) has state ${JSON.stringify(token.state)}; want one of ${STATE_DISK_MARKS.join(', ')}`,
      )
    return { tokenId: Number(id), mark: token.state as StateDiskMark }
  }
  return undefined
}
