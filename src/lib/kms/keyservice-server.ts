/**
 * The key service (`kms.API/GetDataKey`, and GetDataKeys for several at once): data keys derived
 * from the master secret, over plain gRPC as in Constellation. Nothing authenticates the caller, so it listens on loopback unless told
 * otherwise, or on a unix socket only its own user can connect to (hosts shared with other users).
 */
import * as grpc from '@grpc/grpc-js'
import { BlockList, isIP } from 'node:net'
import {
  APIService,
  type GetDataKeyRequest,
  type GetDataKeyResponse,
  type GetDataKeysRequest,
  type GetDataKeysResponse,
} from '../../gen/keyservice.js'
import { chainMessage, CliError } from '../errors/index.js'
import { listenOn, shutdownGracefully } from '../grpc/index.js'
import {
  parseHostPort,
  prepareOwnerOnlySocket,
  restrictSocketToOwner,
  unixSocketPath,
  type Logger,
} from '../system/index.js'
import { ClusterKms } from './hkdf.js'
import type { MasterSecret } from './master-secret.js'

/** Longest data key served; HKDF-SHA256 could give 8160 bytes, no cluster key needs more than 32. */
export const MAX_DATA_KEY_BYTES = 4096
/** A request is an ID and a length; anything near this is not a key request, and would bloat the log. */
export const MAX_KEY_REQUEST_BYTES = 16 * 1024
/** Keys in one GetDataKeys call: a join ticket needs two; more than a few is not a ticket. */
export const MAX_KEYS_PER_CALL = 16
const STOP_GRACE_MS = 10_000

/** Where data keys come from: the cluster KMS in production (`ClusterKms` fits). */
export interface DataKeySource {
  /** `id` without the `key-` prefix; `length` already checked. */
  deriveDataKey(id: string, length: number): Buffer | Promise<Buffer>
}

export interface KeyServiceOptions {
  /** HOST:PORT (port 0 picks a free one), or unix:/path for a socket only this user can connect to. */
  listen: string
  masterSecret: MasterSecret
  logger: Logger
}

/** The key service as a thin entry builds it: the cluster KMS over the node's master secret. */
export function createKeyService({ listen, masterSecret, logger }: KeyServiceOptions): KeyService {
  const kms = new ClusterKms(masterSecret.key, masterSecret.salt)
  return new KeyService(listen, kms, logger.child('keyservice'))
}

/** Why a request is refused, naming the proto field; `undefined` when it is acceptable. */
export function dataKeyRequestProblem(req: GetDataKeyRequest): string | undefined {
  if (req.dataKeyId === '') return 'data_key_id: must not be empty'
  if (req.length === 0 || req.length > MAX_DATA_KEY_BYTES)
    return `length: ${req.length} is out of range, want 1 to ${MAX_DATA_KEY_BYTES} bytes`
  return undefined
}

/** Why a GetDataKeys request is refused, naming the field (`keys[i].length`); `undefined` when acceptable. */
export function dataKeysRequestProblem(req: GetDataKeysRequest): string | undefined {
  if (req.keys.length === 0) return 'keys: must name at least one key'
  if (req.keys.length > MAX_KEYS_PER_CALL)
    return `keys: ${req.keys.length} keys in one call, want at most ${MAX_KEYS_PER_CALL}`
  for (const [i, key] of req.keys.entries()) {
    const problem = dataKeyRequestProblem(key)
    if (problem) return `keys[${i}].${problem}`
  }
  return undefined
}

export class KeyService {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_KEY_REQUEST_BYTES })
  private stopping?: Promise<void>
  private resolveDone!: () => void
  /** Resolves once the service has stopped. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve))

  constructor(
    private readonly listen: string,
    private readonly keys: DataKeySource,
    private readonly log: Logger,
  ) {
    this.server.addService(APIService, { getDataKey: this.getDataKey, getDataKeys: this.getDataKeys })
  }

  /** Binds and serves; resolves with the bound HOST:PORT (or the unix: address). */
  async start(): Promise<string> {
    const credentials = grpc.ServerCredentials.createInsecure()
    const socket = unixSocketPath(this.listen)
    const address =
      socket === undefined
        ? await listenOn(this.server, this.listen, credentials, 'keyService.listen')
        : await this.listenOnSocket(socket, credentials)
    // Plain gRPC: whoever reaches the port can fetch every cluster key.
    if (socket === undefined && !isLoopback(parseHostPort(address).host))
      this.log.warn('Key service reachable from other hosts; it authenticates no caller', { address })
    this.log.info('Key service listening', { address })
    return address
  }

  private async listenOnSocket(socket: string, credentials: grpc.ServerCredentials): Promise<string> {
    await prepareOwnerOnlySocket(socket, 'keyService.listen')
    await new Promise<void>((resolve, reject) =>
      this.server.bindAsync(this.listen, credentials, (err) => (err ? reject(err) : resolve())),
    ).catch((cause: unknown) => {
      throw new CliError(`listening on ${this.listen}`, {
        hint: 'check keyService.listen in the node config',
        cause,
      })
    })
    await restrictSocketToOwner(socket)
    return this.listen
  }

  /** Lets calls in flight answer, force-stops after graceMs; safe to call more than once. */
  stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      await shutdownGracefully(this.server, graceMs)
      this.log.info('Key service stopped')
      this.resolveDone()
    })()
    return this.stopping
  }

  /** One log line per request, with the ID and length; the key itself never reaches the log. */
  private readonly getDataKey: grpc.handleUnaryCall<GetDataKeyRequest, GetDataKeyResponse> = (
    call,
    reply,
  ) => {
    const { dataKeyId, length } = call.request
    this.answer(
      reply,
      { keyId: dataKeyId, length, peer: call.getPeer() },
      dataKeyRequestProblem(call.request),
      {
        derive: () => this.keys.deriveDataKey(dataKeyId, length),
        issued: 'Data key issued',
        response: (dataKey) => ({ dataKey }),
        failure: 'deriving the data key failed',
      },
    )
  }

  /** All the keys or none, in the order asked; one log line naming every ID. */
  private readonly getDataKeys: grpc.handleUnaryCall<GetDataKeysRequest, GetDataKeysResponse> = (
    call,
    reply,
  ) => {
    const { keys } = call.request
    const fields = {
      keyIds: keys.slice(0, MAX_KEYS_PER_CALL).map((k) => `${k.dataKeyId}/${k.length}`),
      peer: call.getPeer(),
    }
    this.answer(reply, fields, dataKeysRequestProblem(call.request), {
      derive: () => Promise.all(keys.map((k) => this.keys.deriveDataKey(k.dataKeyId, k.length))),
      issued: 'Data keys issued',
      response: (dataKeys) => ({ dataKeys }),
      failure: 'deriving the data keys failed',
    })
  }

  /** Refuses a request with a problem, or derives and answers; one log line either way. */
  private answer<Keys, Res>(
    reply: grpc.sendUnaryData<Res>,
    fields: Record<string, unknown>,
    problem: string | undefined,
    how: {
      derive: () => Keys | Promise<Keys>
      issued: string
      response: (keys: Keys) => Res
      failure: string
    },
  ): void {
    if (problem) {
      this.log.warn('Data key request refused', { ...fields, error: problem })
      reply({ code: grpc.status.INVALID_ARGUMENT, details: problem })
      return
    }
    void Promise.resolve()
      .then(how.derive)
      .then(
        (keys) => {
          this.log.info(how.issued, fields)
          reply(null, how.response(keys))
        },
        (err: unknown) => {
          this.log.error('Deriving a data key failed', { ...fields, error: chainMessage(err) })
          reply({ code: grpc.status.INTERNAL, details: how.failure })
        },
      )
  }
}

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true
  const family = isIP(host)
  return family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6')
}
