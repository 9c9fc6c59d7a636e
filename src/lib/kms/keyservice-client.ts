/** Asking a key service for a data key, as the join service does; errors say unreachable or refused. */
import { credentials, Metadata, status, type ServiceError, type requestCallback } from '@grpc/grpc-js'
import { APIClient, type GetDataKeyResponse, type GetDataKeysResponse } from '../../gen/keyservice.js'
import { CliError, ExitCode } from '../errors/index.js'
import { withoutRpcInternals } from '../grpc/index.js'

export const KEY_SERVICE_TIMEOUT_MS = 10_000

export interface GetDataKeyOptions {
  /** Cancels the call; the promise then rejects with the signal's reason. */
  signal?: AbortSignal
  /** Deadline for the whole call, connecting included. */
  timeoutMs?: number
}

/** No answer: nothing listens there, or it did not answer in time. Worth trying again later. */
export class KeyServiceUnreachableError extends CliError {
  constructor(
    readonly address: string,
    reason: string,
  ) {
    super(`key service at ${address} ${reason}`, {
      exitCode: ExitCode.Unreachable,
      hint: `is the key service running and listening on ${address} (keyService.listen in its node config)?`,
    })
    this.name = 'KeyServiceUnreachableError'
  }
}

/** The key service answered with an error status: asking again the same way will not help. */
export class KeyServiceRefusedError extends CliError {
  constructor(
    readonly address: string,
    readonly code: status,
    details: string,
  ) {
    super(`key service at ${address} refused the request (${status[code]}): ${details}`)
    this.name = 'KeyServiceRefusedError'
  }
}

/** `kms.API/GetDataKey` once, on a channel of its own, closed afterwards. */
export async function getDataKey(
  address: string,
  dataKeyId: string,
  length: number,
  opts: GetDataKeyOptions = {},
): Promise<Buffer> {
  const client = new KeyServiceClient(address)
  try {
    return await client.getDataKey(dataKeyId, length, opts)
  } finally {
    client.close()
  }
}

/** One key to ask for: its ID (without the `key-` prefix) and its length in bytes. */
export interface DataKeyRequest {
  id: string
  length: number
}

/**
 * One channel for many calls (a join service asks for two keys per ticket, in one GetDataKeys call).
 * A key service that was down is dialled again within about a second of coming back, not after
 * grpc-js' default two-minute backoff.
 */
export class KeyServiceClient {
  private readonly client: APIClient
  /** The server answered GetDataKeys with UNIMPLEMENTED (a key service from before it): ask one by one. */
  private oneByOne = false

  constructor(readonly address: string) {
    // No transparent retries: a caller that retries decides when, and grpc-js' backoff would hide it.
    this.client = new APIClient(address, credentials.createInsecure(), {
      'grpc.enable_retries': 0,
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 1_000,
      // nothing reads channelz here; it counted and traced every call (one per join ticket)
      'grpc.enable_channelz': 0,
    })
  }

  async getDataKey(dataKeyId: string, length: number, opts: GetDataKeyOptions = {}): Promise<Buffer> {
    const { dataKey } = await this.unary<GetDataKeyResponse>(opts, (options, done) =>
      this.client.getDataKey({ dataKeyId, length }, new Metadata(), options, done),
    )
    return this.checked(dataKey, { id: dataKeyId, length })
  }

  /** The keys in the order asked, in one call; from a key service without GetDataKeys, one call each. */
  async getDataKeys(keys: readonly DataKeyRequest[], opts: GetDataKeyOptions = {}): Promise<Buffer[]> {
    if (this.oneByOne) return Promise.all(keys.map((k) => this.getDataKey(k.id, k.length, opts)))
    const request = { keys: keys.map((k) => ({ dataKeyId: k.id, length: k.length })) }
    let dataKeys: Buffer[]
    try {
      ;({ dataKeys } = await this.unary<GetDataKeysResponse>(opts, (options, done) =>
        this.client.getDataKeys(request, new Metadata(), options, done),
      ))
    } catch (err) {
      if (!(err instanceof KeyServiceRefusedError && err.code === status.UNIMPLEMENTED)) throw err
      this.oneByOne = true
      return this.getDataKeys(keys, opts)
    }
    if (dataKeys.length !== keys.length)
      throw new CliError(`key service at ${this.address} sent ${dataKeys.length} keys, want ${keys.length}`)
    return dataKeys.map((key, i) => this.checked(key, keys[i] as DataKeyRequest))
  }

  /** One unary call with a deadline, cancelled by the signal; a gRPC error becomes unreachable or refused. */
  private async unary<Res>(
    { signal, timeoutMs = KEY_SERVICE_TIMEOUT_MS }: GetDataKeyOptions,
    start: (options: { deadline: number }, done: requestCallback<Res>) => { cancel(): void },
  ): Promise<Res> {
    signal?.throwIfAborted()
    try {
      return await new Promise<Res>((resolve, reject) => {
        const call = start({ deadline: Date.now() + timeoutMs }, (err, res) => {
          signal?.removeEventListener('abort', cancel)
          if (err) reject(err)
          else resolve(res as Res)
        })
        const cancel = () => call.cancel()
        signal?.addEventListener('abort', cancel, { once: true })
      })
    } catch (err) {
      signal?.throwIfAborted()
      throw describeFailure(this.address, timeoutMs, err)
    }
  }

  private checked(key: Buffer, asked: DataKeyRequest): Buffer {
    if (key.length !== asked.length)
      throw new CliError(
        `key service at ${this.address} sent ${key.length} bytes for data key ${JSON.stringify(asked.id)}, want ${asked.length}`,
      )
    return key
  }

  close(): void {
    this.client.close()
  }
}

/** The gRPC error's own words are already in the message, so it is not kept as the cause. */
function describeFailure(address: string, timeoutMs: number, err: unknown): unknown {
  if (!isServiceError(err)) return err
  const details = withoutRpcInternals(err.details || err.message)
  if (err.code === status.UNAVAILABLE)
    return new KeyServiceUnreachableError(address, `is unreachable: ${details}`)
  if (err.code === status.DEADLINE_EXCEEDED)
    return new KeyServiceUnreachableError(address, `did not answer within ${timeoutMs} ms`)
  return new KeyServiceRefusedError(address, err.code, details)
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number'
}
