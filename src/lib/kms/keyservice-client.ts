/** Asking a key service for a data key, as the join service does; errors say unreachable or refused. */
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js'
import { APIClient, type GetDataKeyResponse } from '../../gen/keyservice.js'
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

/**
 * One channel for many calls (a join service asks twice per ticket). A key service that was down is
 * dialled again within about a second of coming back, not after grpc-js' default two-minute backoff.
 */
export class KeyServiceClient {
  private readonly client: APIClient

  constructor(readonly address: string) {
    // No transparent retries: a caller that retries decides when, and grpc-js' backoff would hide it.
    this.client = new APIClient(address, credentials.createInsecure(), {
      'grpc.enable_retries': 0,
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 1_000,
    })
  }

  async getDataKey(
    dataKeyId: string,
    length: number,
    { signal, timeoutMs = KEY_SERVICE_TIMEOUT_MS }: GetDataKeyOptions = {},
  ): Promise<Buffer> {
    signal?.throwIfAborted()
    let response: GetDataKeyResponse
    try {
      response = await new Promise<GetDataKeyResponse>((resolve, reject) => {
        const call = this.client.getDataKey(
          { dataKeyId, length },
          new Metadata(),
          { deadline: Date.now() + timeoutMs },
          (err, res) => {
            signal?.removeEventListener('abort', cancel)
            if (err) reject(err)
            else resolve(res)
          },
        )
        const cancel = () => call.cancel()
        signal?.addEventListener('abort', cancel, { once: true })
      })
    } catch (err) {
      signal?.throwIfAborted()
      throw describeFailure(this.address, timeoutMs, err)
    }
    if (response.dataKey.length !== length)
      throw new CliError(
        `key service at ${this.address} sent ${response.dataKey.length} bytes for data key ${JSON.stringify(dataKeyId)}, want ${length}`,
      )
    return response.dataKey
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
