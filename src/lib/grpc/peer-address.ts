/** Which peer a connection or call is from, as per-peer limits count: its remote address, without the port. */

/** `::ffff:10.0.0.5` (an IPv4 peer on a dual-stack listener) is `10.0.0.5`. */
export function normalizeAddress(address: string): string {
  return address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1')
}

/** The address of a grpc-js peer string (`10.0.0.5:4711`, `[::1]:4711`). */
export function peerAddress(peer: string): string {
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(peer)
  return normalizeAddress(bracketed ? (bracketed[1] ?? '') : peer.replace(/:\d+$/, ''))
}
