/**
 * How many connections an unauthenticated peer may hold: counted per remote address and in all,
 * from accept (before any TLS byte) until close, so sockets that never speak count too. A connection
 * over a limit is closed at once, before it costs a TLS handshake.
 */
import type { ServerOptions } from '@grpc/grpc-js'
import type { Socket } from 'node:net'
import { normalizeAddress } from './peer-address.js'

export interface ConnectionLimits {
  /** Connections one remote address may hold at once, handshaking or established. */
  perPeer?: number
  /** Connections all addresses together may hold at once. */
  total?: number
  /**
   * A connection with no call open for this long is closed (a GOAWAY): one that finished its TLS
   * handshake and then says nothing would otherwise hold its slot for good. The gRPC server takes
   * it at construction (boundedServerOptions).
   */
  idleTimeoutMs?: number
}

/**
 * A genuine node or operator holds one or two connections to a server at once (the tpm-ek
 * activation adds a second); 16 leaves room for several nodes behind one address (test clusters on
 * 127.0.0.1, NAT). The total bounds file descriptors and TLS memory (~100 KiB a connection). A
 * genuine client closes its channel after its call; idle for a minute is a connection left behind.
 */
export const DEFAULT_CONNECTION_LIMITS: Required<ConnectionLimits> = {
  perPeer: 16,
  total: 1_024,
  idleTimeoutMs: 60_000,
}

/** grpc.Server options that apply these limits' idle timeout. */
export function boundedServerOptions(limits: ConnectionLimits = {}): ServerOptions {
  return { 'grpc.max_connection_idle_ms': limits.idleTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.idleTimeoutMs }
}

export interface ConnectionRefusal {
  address: string
  limit: 'peer' | 'total'
  /** Connections open (the address's for 'peer', all for 'total') when it was refused. */
  open: number
  /** Refusals so far: reported at 1, 2, 4, 8, … so that a flood costs a few log lines. */
  refused: number
}

interface Peer {
  open: number
  refused: number
}

export class ConnectionLimiter {
  private readonly limits: Required<ConnectionLimits>
  private readonly byAddress = new Map<string, Peer>()
  private open_ = 0
  private refusedOverTotal = 0

  constructor(
    limits: ConnectionLimits = {},
    private readonly onRefused?: (refusal: ConnectionRefusal) => void,
  ) {
    this.limits = { ...DEFAULT_CONNECTION_LIMITS, ...limits }
  }

  /** Addresses holding a connection now (the state a flood from many addresses could grow). */
  get peers(): number {
    return this.byAddress.size
  }

  /** Counts `socket` until it closes; destroys it and returns false when it is over a limit. */
  admit(socket: Socket): boolean {
    const address = normalizeAddress(socket.remoteAddress ?? '')
    if (this.open(address) !== 'ok') {
      socket.destroy()
      return false
    }
    socket.once('close', () => this.close(address))
    return true
  }

  /** One more connection from `address`: 'ok' (counted), or the limit it would pass (not counted). */
  open(address: string): 'ok' | 'peer' | 'total' {
    const peer = this.byAddress.get(address) ?? { open: 0, refused: 0 }
    if (peer.open >= this.limits.perPeer) {
      peer.refused++
      this.report({ address, limit: 'peer', open: peer.open, refused: peer.refused })
      return 'peer'
    }
    if (this.open_ >= this.limits.total) {
      this.refusedOverTotal++
      this.report({ address, limit: 'total', open: this.open_, refused: this.refusedOverTotal })
      return 'total'
    }
    peer.open++
    this.open_++
    this.byAddress.set(address, peer)
    return 'ok'
  }

  close(address: string): void {
    const peer = this.byAddress.get(address)
    if (!peer) return
    this.open_--
    if (--peer.open === 0) this.byAddress.delete(address)
  }

  private report(refusal: ConnectionRefusal): void {
    if ((refusal.refused & (refusal.refused - 1)) === 0) this.onRefused?.(refusal)
  }
}
