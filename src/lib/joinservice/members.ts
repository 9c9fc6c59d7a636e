/**
 * Who a peer is, from the cluster's metadata and never from its request: the instance the metadata
 * lists at the address a request came from gives the node's name and role (DESIGN §5: attestation
 * says what a node runs, not who it is). Static metadata lists every member in the node config; a
 * metadata service is asked again as the cluster changes, at a bounded rate.
 */
import type { NodeMember } from '../nodeconfig/index.js'
import { sleepMs } from '../system/index.js'
import { ipBytes } from './ip-address.js'

export interface MemberDirectory {
  /** The instances the metadata lists at `address` (compared by value), now. */
  at(address: string): Promise<NodeMember[]>
}

const addressKey = (address: string) => ipBytes(address)?.toString('hex') ?? `text:${address}`

function indexByAddress(members: readonly NodeMember[]): Map<string, NodeMember[]> {
  const index = new Map<string, NodeMember[]>()
  for (const m of members) {
    const key = addressKey(m.vpcIP)
    index.set(key, [...(index.get(key) ?? []), m])
  }
  return index
}

export function staticMembers(members: readonly NodeMember[]): MemberDirectory {
  const index = indexByAddress(members)
  return { at: (address) => Promise.resolve(index.get(addressKey(address)) ?? []) }
}

export interface RefreshingMembersOptions {
  /** Every instance the metadata lists (GET /peers). */
  fetch: () => Promise<NodeMember[]>
  clock: () => number
  /** Waits that long (sleepMs; tests pass one that moves their clock). */
  sleep?: (ms: number) => Promise<void>
  /** A list older than this is fetched again before it answers. */
  maxAgeMs?: number
  /**
   * An address the list lacks is looked up again in a list at most this old, waiting for it if
   * need be: a node added a moment ago is found, and a flood of unknown addresses costs the
   * metadata service at most one request per this interval.
   */
  recheckAfterMs?: number
}

export const MEMBERS_MAX_AGE_MS = 30_000
export const MEMBERS_RECHECK_AFTER_MS = 1_000

/** The metadata service's list, cached; concurrent callers share one fetch. A failed fetch rejects. */
export function refreshingMembers(opts: RefreshingMembersOptions): MemberDirectory {
  const maxAgeMs = opts.maxAgeMs ?? MEMBERS_MAX_AGE_MS
  const recheckAfterMs = opts.recheckAfterMs ?? MEMBERS_RECHECK_AFTER_MS
  const sleep = opts.sleep ?? ((ms: number) => sleepMs(ms))
  let cached: { at: number; index: Map<string, NodeMember[]> } | undefined
  let inFlight: Promise<Map<string, NodeMember[]>> | undefined
  const age = () => (cached ? opts.clock() - cached.at : Infinity)
  const refresh = () =>
    (inFlight ??= opts
      .fetch()
      .then((members) => {
        cached = { at: opts.clock(), index: indexByAddress(members) }
        return cached.index
      })
      .finally(() => (inFlight = undefined)))
  return {
    async at(address) {
      const key = addressKey(address)
      let index = !cached || age() >= maxAgeMs ? await refresh() : cached.index
      if (!index.has(key)) {
        const wait = recheckAfterMs - age()
        if (wait > 0) await sleep(wait)
        // another caller may have asked meanwhile: its answer is fresh enough
        index = age() >= recheckAfterMs ? await refresh() : (cached?.index ?? index)
      }
      return index.get(key) ?? []
    },
  }
}
