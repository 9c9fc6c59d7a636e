/** The Init RPC's edge: runs initializeNode, streams init_success or init_failure + log chunks + a status. */
import { status, type ServerWritableStream } from '@grpc/grpc-js'
import type { InitRequest, InitResponse } from '../../gen/init.js'
import { chainMessage } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import {
  BadInitRequestError,
  InitSecretError,
  initializeNode,
  NodeNotReadyError,
  type InitNodeDeps,
} from './init-node.js'
import { chunk, type LogSource } from './logs.js'
import { NodeLockedError } from './node-lock.js'

export type InitCall = ServerWritableStream<InitRequest, InitResponse>

export class InitHandler {
  private readonly inFlight = new Set<Promise<void>>()
  /** True once an Init answered init_success. */
  succeeded = false

  constructor(
    private readonly deps: InitNodeDeps,
    private readonly logs: LogSource,
    private readonly log: Logger,
  ) {}

  /** The grpc-js handler for /init.API/Init. */
  readonly init = (call: InitCall): void => {
    const work = this.serve(call).finally(() => this.inFlight.delete(work))
    this.inFlight.add(work)
  }

  /** Resolves when every Init in flight has answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight])
  }

  private async serve(call: InitCall): Promise<void> {
    const peer = call.getPeer()
    this.log.info('Init request received', { peer })
    try {
      const result = await initializeNode(call.request, this.deps)
      this.succeeded = true
      await write(call, {
        kind: {
          $case: 'initSuccess',
          value: { kubeconfig: result.kubeconfig, clusterId: result.clusterId, ownerId: Buffer.alloc(0) },
        },
      })
      call.end()
    } catch (err) {
      const code = statusOf(err)
      const message = chainMessage(err)
      this.log.error('Init failed', { peer, error: message })
      await this.fail(call, code, message)
    }
  }

  private async fail(call: InitCall, code: status, message: string): Promise<void> {
    try {
      await write(call, {
        kind: {
          $case: 'initFailure',
          value: { error: `rpc error: code = ${status[code]} desc = ${message}` },
        },
      })
      for (const log of chunk(await this.logs.collect()))
        await write(call, { kind: { $case: 'log', value: { log } } })
    } finally {
      call.emit('error', { code, details: message })
    }
  }
}

function statusOf(err: unknown): status {
  if (err instanceof NodeLockedError || err instanceof NodeNotReadyError) return status.FAILED_PRECONDITION
  if (err instanceof InitSecretError) return status.PERMISSION_DENIED
  if (err instanceof BadInitRequestError) return status.INVALID_ARGUMENT
  return status.INTERNAL
}

/** Waits for flow control, so a long log never piles up in memory. */
function write(call: InitCall, msg: InitResponse): Promise<void> {
  return new Promise((resolve) => {
    if (call.write(msg)) resolve()
    else call.once('drain', () => resolve())
  })
}
