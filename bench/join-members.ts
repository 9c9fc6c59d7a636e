/**
 * The bench nodes as the join service's metadata lists them: node i is `bench-i` at a loopback
 * address of its own, which its requests leave from (Linux lets a client bind any 127/8 address).
 */
import type { NodeMember } from '../src/lib/nodeconfig/index.js'

export const benchNodeAddress = (i: number): string => `127.3.${(i + 1) >> 8}.${(i + 1) & 255}`

/** As many as the largest round has joiners. */
export const benchMembers = (count: number): NodeMember[] =>
  Array.from({ length: count }, (_, i) => ({
    name: `bench-${i}`,
    role: 'worker',
    vpcIP: benchNodeAddress(i),
  }))
