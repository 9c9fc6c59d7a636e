/** IP addresses compared by value: `::ffff:10.0.0.5` is `10.0.0.5`, `2001:DB8::1` is `2001:db8:0:0:0:0:0:1`. */
import { isIPv4, isIPv6 } from 'node:net'

/**
 * The address's bytes: 4 for IPv4 and IPv4-mapped IPv6 (a dual-stack listener reports IPv4 peers
 * that way), 16 for other IPv6; undefined when the text is not an address. A zone (`%eth0`) is dropped.
 */
export function ipBytes(text: string): Buffer | undefined {
  const address = text.replace(/%.*$/, '')
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number))
  if (!isIPv6(address)) return undefined
  const bytes = ipv6Bytes(address)
  const mapped = bytes.subarray(0, 12).equals(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]))
  return mapped ? bytes.subarray(12) : bytes
}

export function sameIp(a: string, b: string): boolean {
  const x = ipBytes(a)
  const y = ipBytes(b)
  return x !== undefined && y !== undefined && x.equals(y)
}

/** 127.0.0.0/8 or ::1: an address of this host that no other host can reach. */
export function isLoopback(text: string): boolean {
  const bytes = ipBytes(text)
  if (!bytes) return false
  return bytes.length === 4 ? bytes[0] === 127 : bytes.equals(Buffer.from([...Array<number>(15).fill(0), 1]))
}

/** The host of a grpc-js peer string (`10.0.0.5:4711`, `::1:4711`, `[::1]:4711`). */
export function peerHost(peer: string): string {
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(peer)
  if (bracketed) return bracketed[1] ?? ''
  return peer.replace(/:\d+$/, '')
}

/** Parses text node:net already accepted as IPv6 (so groups and the embedded IPv4 tail are well-formed). */
function ipv6Bytes(address: string): Buffer {
  let text = address
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (tail?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = tail[1].split('.').map(Number)
    text = text.slice(0, -tail[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', rest] = text.split('::')
  const groups = (s: string) => (s === '' ? [] : s.split(':'))
  const front = groups(head)
  const back = rest === undefined ? [] : groups(rest)
  const all = [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back]
  const out = Buffer.alloc(16)
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2))
  return out
}
