/**
 * The Init RPC's edge: runs initializeNode, streams init_success or init_failure (+ that attempt's
 * log, only to a caller who proved the init secret) + a status. The server is attested, the client
 * is not: anyone who reaches the port may call, so an unproven caller costs little and learns nothing.
 */
import { status, type ServerWritableStream } from '@grpc/grpc-js'
import type { InitRequest, InitResponse } from '../../gen/init.js'
import { chainMessage } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import {
  BadInitRequestError,
  ComponentsUnavailableError,
  InitSecretError,
  initializeNode,
  NodeNotReadyError,
  type InitNodeDeps,
} from './init-node.js'
import { chunk, type LogCollector } from './logs.js'
import { NodeLockedError } from './node-lock.js'

export type InitCall = ServerWritableStream<InitRequest, InitResponse>

/** Calls still checking their init secret at the same time; more are refused at once. bcrypt at cost 4 takes ~2 ms. */
export const MAX_UNPROVEN_INITS = 4

export class InitHandler {
  private readonly inFlight = new Set<Promise<void>>()
  private unproven = 0
  /** True once an Init answered init_success. */
  succeeded = false

  constructor(
    private readonly deps: InitNodeDeps,
    private readonly logs: LogCollector,
    private readonly log: Logger,
  ) {}

  /** The grpc-js handler for /init.API/Init. */
  readonly init = (call: InitCall): void => {
    const work = this.logs.runAttempt(() => this.serve(call)).finally(() => this.inFlight.delete(work))
    this.inFlight.add(work)
  }

  /** Resolves when every Init in flight has answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight])
  }

  private async serve(call: InitCall): Promise<void> {
    const peer = call.getPeer()
    if (this.unproven >= MAX_UNPROVEN_INITS) {
      this.log.warn('Init refused: too many calls checking their init secret', { peer })
      return this.fail(call, status.RESOURCE_EXHAUSTED, 'too many Init calls at once; try again', false)
    }
    this.log.info('Init request received', { peer })
    this.unproven++
    let proven = false
    const secretProven = () => {
      if (proven) return
      proven = true
      this.unproven--
    }
    try {
      const result = await initializeNode(call.request, { ...this.deps, onSecretProven: secretProven })
      this.succeeded = true
      await write(call, {
        kind: {
          $case: 'initSuccess',
          value: { kubeconfig: result.kubeconfig, clusterId: result.clusterId, ownerId: Buffer.alloc(0) },
        },
      })
      call.end()
    } catch (err) {
      const sendLog = proven
      secretProven() // the check is over either way
      const code = statusOf(err)
      const message = chainMessage(err)
      this.log.error('Init failed', { peer, error: message })
      await this.fail(call, code, message, sendLog)
    }
  }

  /** init_failure, then (for a caller who proved the init secret) this attempt's log, then the status. */
  private async fail(call: InitCall, code: status, message: string, sendLog: boolean): Promise<void> {
    try {
      await write(call, {
        kind: {
          $case: 'initFailure',
          value: { error: `rpc error: code = ${status[code]} desc = ${message}` },
        },
      })
      if (!sendLog) return
      for (const log of chunk(this.logs.attemptLog())) {
        if (call.cancelled) return
        await write(call, { kind: { $case: 'log', value: { log } } })
      }
    } finally {
      call.emit('error', { code, details: message })
    }
  }
}

function statusOf(err: unknown): status {
  if (
    err instanceof NodeLockedError ||
    err instanceof NodeNotReadyError ||
    err instanceof ComponentsUnavailableError
  )
    return status.FAILED_PRECONDITION
  if (err instanceof InitSecretError) return status.PERMISSION_DENIED
  if (err instanceof BadInitRequestError) return status.INVALID_ARGUMENT
  return status.INTERNAL
}

/** Waits for flow control, so a long log never piles up in memory; a caller that went away ends the wait. */
function write(call: InitCall, msg: InitResponse): Promise<void> {
  return new Promise((resolve) => {
    if (call.cancelled || call.write(msg)) return resolve()
    const done = () => {
      call.off('drain', done)
      call.off('cancelled', done)
      resolve()
    }
    call.once('drain', done)
    call.once('cancelled', done)
  })
}
