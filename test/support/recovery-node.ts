/**
 * A rebooted node's recovery endpoint for tests that probe it: a real RecoveryServer over aTLS on
 * loopback (the fake attestation authority: the node only carries attestation), its disk a spy that
 * opens with one master secret, records each try and can hold it, and raw HTTP/2 callers from
 * chosen 127/8 addresses (raw-peer.ts). `close()` ends the callers and the server.
 */
import { randomBytes } from 'node:crypto'
import { RecoverMessage } from '../../src/gen/recover.js'
import { createAttestedServerCredentials } from '../../src/lib/atls/index.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'
import { clusterKmsUri, NO_STORE_URI, type MasterSecret } from '../../src/lib/kms/index.js'
import { RecoveryRefusedError, RecoveryServer } from '../../src/lib/statedisk/index.js'
import type { RecoveryServerOptions } from '../../src/lib/statedisk/recovery-server.js'
import { createLogger, type Logger } from '../../src/lib/system/index.js'
import { createFakeAttestation } from './fake-attestation.js'
import { openRawGrpc, type RawGrpcSession } from './raw-peer.js'

export const RECOVER = '/recoverproto.API/Recover'

/** A Recover request's bytes. */
export const recoverRequest = (kmsUri: string, storageUri = NO_STORE_URI) =>
  Buffer.from(RecoverMessage.encode({ kmsUri, storageUri }).finish())

export class RecoveryNode {
  readonly master: MasterSecret = { key: randomBytes(32), salt: randomBytes(32) }
  readonly diskUuid = '0b4f5e2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b'
  /** The node's own log, a JSON line each. */
  readonly lines: string[] = []
  /** Master secrets the disk was asked to open with, in order: the spy. */
  readonly tried: Buffer[] = []
  /** While set, each try on the disk waits for it. */
  hold: Promise<void> | undefined
  /** What the disk does with a secret besides refusing a wrong one. */
  diskFault: Error | undefined
  server: RecoveryServer | undefined
  port = 0
  /** The fake attestation authority the node attests with; its validator() is the operator's. */
  readonly attestation = createFakeAttestation()
  private readonly sessions: RawGrpcSession[] = []

  readonly log: Logger = createLogger({ format: 'json', write: (l) => this.lines.push(l) })
  readonly credentials = () => createAttestedServerCredentials({ issuer: this.attestation.issuer() })

  /** A Recover request with this node's master secret. */
  rightSecret = (storageUri = NO_STORE_URI) => recoverRequest(clusterKmsUri(this.master), storageUri)

  /** Starts the endpoint; resolves with its address. */
  async serve(opts: Partial<RecoveryServerOptions> = {}): Promise<string> {
    this.server = new RecoveryServer({
      listen: '127.0.0.1:0',
      credentials: this.credentials(),
      recover: (master) => this.tryOnDisk(master.key),
      log: this.log,
      ...opts,
    })
    const address = await this.server.start()
    this.port = Number(address.split(':').pop())
    return address
  }

  /** The spy disk: opens with this node's master key only. */
  async tryOnDisk(key: Buffer): Promise<void> {
    this.tried.push(key)
    await this.hold
    if (this.diskFault) throw this.diskFault
    if (!key.equals(this.master.key))
      throw new RecoveryRefusedError(
        `the master secret does not open this node's state disk ${this.diskUuid}`,
      )
  }

  /** Makes each try wait until the returned function is called. */
  holdTries(): () => void {
    let release!: () => void
    this.hold = new Promise<void>((r) => (release = r))
    return release
  }

  /** A caller's HTTP/2 session from `address` (127/8), after its own aTLS handshake. */
  async from(address: string): Promise<RawGrpcSession> {
    const session = await openRawGrpc(this.port, address, encodeNonce(randomBytes(32)))
    this.sessions.push(session)
    return session
  }

  async close(): Promise<void> {
    await Promise.all(this.sessions.map((s) => s.close()))
    await this.server?.stop(100)
    this.server = undefined
  }
}
