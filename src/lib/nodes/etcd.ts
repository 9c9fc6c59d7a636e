/**
 * A control plane's etcd member, and the rule that keeps etcd's quorum when one leaves. Every
 * control plane of a kubeadm cluster runs a stacked etcd member whose peer URL is
 * `https://<its InternalIP>:2380`; Constellation's node operator finds a leaving node's member by
 * that URL and removes it with etcd's MemberRemove before the Node is deleted.
 */
import { CliError } from '../errors/index.js'

export const ETCD_PEER_PORT = 2380

export interface EtcdMember {
  /** etcd's member ID (hex). */
  id: string
  name: string
  peerURLs: string[]
}

/** The cluster's etcd as removing a control plane needs it. */
export interface EtcdMembership {
  /** Where the members are read from, for messages (e.g. "the simulator's etcd"). */
  readonly where: string
  members(): Promise<EtcdMember[]>
  /** etcd's MemberRemove. */
  remove(member: EtcdMember): Promise<void>
}

export const peerUrlOf = (address: string) =>
  `https://${address.includes(':') ? `[${address}]` : address}:${ETCD_PEER_PORT}`

/** The member of the node at `address` (by peer URL), else one named after the node. */
export function memberOf(members: readonly EtcdMember[], node: string, address?: string) {
  const url = address === undefined ? undefined : peerUrlOf(address)
  return members.find((m) => (url !== undefined && m.peerURLs.includes(url)) || m.name === node)
}

/**
 * Refuses a removal that leaves etcd without a safe quorum. etcd commits a change when a majority
 * of its members agree: with 2 members that majority is both, so removing one needs the leaving
 * member's vote and leaves a single member that survives no failure; the last member cannot be
 * removed at all (the cluster's state would go with it).
 */
export function checkQuorum(node: string, members: readonly EtcdMember[], where: string): void {
  const n = members.length
  if (n <= 1)
    throw new CliError(
      `refusing to remove ${node}: it is the last etcd member (${where}); the cluster's state would go with it`,
      {
        hint: 'add a control plane first (`constellation mini add NAME --role control-plane` in mini); nothing was changed',
      },
    )
  if (n === 2)
    throw new CliError(
      `refusing to remove ${node}: it is one of 2 etcd members (${where}); etcd's quorum of 2 needs both to commit the removal, and the one member left would survive no failure`,
      { hint: 'add a control plane first, so that 2 of 3 remain; nothing was changed' },
    )
}
