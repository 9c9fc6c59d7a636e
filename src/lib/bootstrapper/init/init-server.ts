/**
 * The Init RPC's edge: runs initializeNode, streams init_success or init_failure (+ that attempt's
 * log, only to a caller who proved the init secret) + a status. An answer whose caller was gone is
 * kept, and handed to a resume (resume.ts) that proves the init secret and the master secret. The
 * server is attested, the client is not: anyone who reaches the port may call, so an unproven
 * caller costs little and learns nothing.
 */
import { Metadata, status, type ServerWritableStream } from '@grpc/grpc-js'
import type { InitRequest, InitResponse } from '../../../gen/init.js'
import { chainMessage } from '../../errors/index.js'
import { peerAddress } from '../../grpc/index.js'
import { deriveResumeKey } from '../../kms/index.js'
import { RecoveryAdmission, type RecoveryLimits, type RefusalReason } from '../../statedisk/index.js'
import type { Logger } from '../../system/index.js'
import {
  BadInitRequestError,
  CallerGoneError,
  ComponentsUnavailableError,
  InitSecretError,
  initializeNode,
  NodeNotReadyError,
  type InitNodeDeps,
} from './init-node.js'
import type { InitAnswer, InitResultKeeper } from './init-result.js'
import { chunk, type LogCollector } from '../logs.js'
import { NodeLockedError } from '../node-lock.js'
import {
  checkResume,
  isResumeRequest,
  nothingToResume,
  NothingToResumeError,
  ResumeProofError,
  RESUME_LIMITS,
  type AttestedKeySet,
} from './resume.js'

export type InitCall = ServerWritableStream<InitRequest, InitResponse>

/** Calls still checking their init secret at the same time; more are refused at once. bcrypt at cost 4 takes ~2 ms. */
export const MAX_UNPROVEN_INITS = 4

/** Why a resume was not taken on (RESOURCE_EXHAUSTED, with when to ask again). */
const NOT_TAKEN: Record<RefusalReason, string> = {
  busy: 'the node is checking other resumes, as many as it takes at once',
  peer: 'a resume from this address is being checked already',
  backoff: 'too many wrong secrets from this address',
}

export interface InitHandlerOptions {
  /** The keys the init server's credentials attested (resume proofs are bound to one). */
  attestedKeys: AttestedKeySet
  /** An answer kept by an earlier run of the bootstrapper (a rebooted node); a fresh keeper otherwise. */
  keeper: InitResultKeeper
  /** How many resumes are checked at once, and how long an address waits after a wrong secret. */
  resumeLimits?: RecoveryLimits
}

export class InitHandler {
  private readonly inFlight = new Set<Promise<void>>()
  private unproven = 0
  private readonly admission: RecoveryAdmission
  /** Resumes refused before any check, for logging the 1st, 2nd, 4th, … only. */
  private untried = 0
  /** Calls that have their answer (or failure) on the wire. */
  private readonly answered = new WeakSet<InitCall>()
  readonly keeper: InitResultKeeper

  constructor(
    private readonly deps: InitNodeDeps,
    private readonly logs: LogCollector,
    private readonly log: Logger,
    private readonly opts: InitHandlerOptions,
  ) {
    this.keeper = opts.keeper
    this.admission = new RecoveryAdmission({ ...RESUME_LIMITS, ...opts.resumeLimits })
  }

  /** True once an Init answered init_success (whether or not its caller received it yet). */
  get succeeded(): boolean {
    return this.keeper.state === 'pending' || this.keeper.state === 'handed-over'
  }

  /** Nothing more to serve: the answer was handed over, or the Init failed after the lock. */
  get finished(): boolean {
    return this.keeper.state === 'handed-over' || this.keeper.state === 'failed'
  }

  /** The grpc-js handler for /init.API/Init. */
  readonly init = (call: InitCall): void => {
    const serve = isResumeRequest(call.request) ? this.serveResume : this.serveInit
    const work = this.logs.runAttempt(() => serve(call)).finally(() => this.inFlight.delete(work))
    this.inFlight.add(work)
  }

  /** Resolves when every Init in flight has answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight])
  }

  private readonly serveInit = async (call: InitCall): Promise<void> => {
    const peer = call.getPeer()
    // Once locked, a full request can change nothing: refused before its secret is checked, so an
    // initialized node is no oracle for init secrets either.
    if (this.deps.nodeLock.isLocked || this.keeper.state !== 'none')
      return this.fail(call, status.FAILED_PRECONDITION, new NodeLockedError().message, false)
    if (this.unproven >= MAX_UNPROVEN_INITS) {
      this.log.warn('Init refused: too many calls checking their init secret', { peer })
      return this.fail(call, status.RESOURCE_EXHAUSTED, 'too many Init calls at once; try again', false)
    }
    this.log.info('Init request received', { peer })
    this.whenGone(call, () =>
      this.log.warn('The Init caller went away', {
        peer,
        then: this.deps.nodeLock.isLocked
          ? 'the node goes on past its lock and keeps its answer for a resume'
          : 'the node takes no lock for this request',
      }),
    )
    this.unproven++
    let proven = false
    const secretProven = () => {
      if (proven) return
      proven = true
      this.unproven--
    }
    let resumeKey: Buffer | undefined
    try {
      const result = await initializeNode(call.request, {
        ...this.deps,
        onSecretProven: secretProven,
        callerGone: () => call.cancelled,
        onLocked: (master) => {
          resumeKey = deriveResumeKey(master)
          this.keeper.begin(resumeKey)
          this.deps.onLocked(master)
        },
      })
      const answer = { ...result, ownerId: Buffer.alloc(0), resumeKey: resumeKey ?? Buffer.alloc(0) }
      this.keeper.succeed(answer)
      await this.answer(call, answer)
    } catch (err) {
      if (resumeKey) this.keeper.fail(err) // this call took the lock: the node is spent
      const sendLog = proven
      secretProven() // the check is over either way
      const code = statusOf(err)
      const message = chainMessage(err)
      this.log.error('Init failed', { peer, error: message })
      await this.fail(call, code, message, sendLog)
    }
  }

  /** A caller back for the answer of the Init that took the lock: both secrets first, then the answer. */
  private readonly serveResume = async (call: InitCall): Promise<void> => {
    const caller = call.getPeer()
    const nothing = nothingToResume(this.keeper)
    if (nothing) {
      this.logUntried(nothing.message, caller)
      return this.fail(call, status.FAILED_PRECONDITION, nothing.message, false)
    }
    const peer = peerAddress(caller)
    const verdict = this.admission.admit(peer)
    if (!verdict.admitted) {
      const details = `${NOT_TAKEN[verdict.reason]}; retry in ${Math.ceil(verdict.retryAfterMs / 100) / 10} s`
      this.logUntried(NOT_TAKEN[verdict.reason], caller)
      const metadata = new Metadata()
      metadata.set('grpc-retry-pushback-ms', String(verdict.retryAfterMs))
      return this.fail(call, status.RESOURCE_EXHAUSTED, details, false, metadata)
    }
    try {
      await checkResume(call.request, { ...this.deps, ...this.opts, keeper: this.keeper })
    } catch (err) {
      this.admission.leaveWrongSecret(peer)
      this.log.warn('Resume refused', { peer: caller, error: chainMessage(err) })
      return this.fail(call, statusOf(err), chainMessage(err), false)
    }
    this.admission.leave(peer)
    this.log.info('Resume proven; answering with the kept Init answer once there is one', { peer: caller })
    this.whenGone(call, () => this.log.warn('The resume caller went away', { peer: caller }))
    const settled = await this.keeper.settled()
    if (!settled.ok)
      return this.fail(
        call,
        status.INTERNAL,
        `the Init this node ran failed after its lock, and the node cannot be used: ${chainMessage(settled.error)}`,
        false,
      )
    await this.answer(call, settled.answer)
  }

  /**
   * init_success on a call still open hands the answer over; a caller already gone leaves it kept
   * (on the state disk too) for a resume.
   */
  private async answer(call: InitCall, answer: InitAnswer): Promise<void> {
    const delivered =
      !call.cancelled &&
      (await write(call, {
        kind: {
          $case: 'initSuccess',
          value: { kubeconfig: answer.kubeconfig, clusterId: answer.clusterId, ownerId: answer.ownerId },
        },
      }))
    if (delivered) {
      this.answered.add(call)
      // the kept copy goes before the status: once the caller sees OK, nothing is left on the node
      await this.keeper
        .handOver()
        .catch((err: unknown) =>
          this.log.warn('Removing the kept Init answer failed', { error: chainMessage(err) }),
        )
      call.end()
      return
    }
    this.log.warn('The caller went away before the Init answer; keeping it for a resume', {
      peer: call.getPeer(),
      hint: 'constellation init, run again in the workspace that initialized this node, fetches it',
    })
    await this.keeper.keep(answer).catch((err: unknown) =>
      this.log.error('Keeping the Init answer on the state disk failed; it is kept in memory only', {
        error: chainMessage(err),
      }),
    )
  }

  /** init_failure, then (for a caller who proved the init secret) this attempt's log, then the status. */
  private async fail(
    call: InitCall,
    code: status,
    message: string,
    sendLog: boolean,
    metadata?: Metadata,
  ): Promise<void> {
    this.answered.add(call)
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
      call.emit('error', { code, details: message, ...(metadata ? { metadata } : {}) })
    }
  }

  /**
   * `onGone` when the caller hangs up before its answer. The CLI cancels its call as soon as it has
   * init_success; that is no news.
   */
  private whenGone(call: InitCall, onGone: () => void): void {
    call.once('cancelled', () => {
      if (!this.answered.has(call)) onGone()
    })
  }

  /** A resume answered without a check: logged at the 1st, 2nd, 4th, … so that a flood costs a few lines. */
  private logUntried(reason: string, peer: string): void {
    const count = ++this.untried
    if ((count & (count - 1)) === 0) this.log.warn('Resume refused before any check', { peer, reason, count })
  }
}

function statusOf(err: unknown): status {
  if (
    err instanceof NodeLockedError ||
    err instanceof NodeNotReadyError ||
    err instanceof CallerGoneError ||
    err instanceof ComponentsUnavailableError ||
    err instanceof NothingToResumeError
  )
    return status.FAILED_PRECONDITION
  if (err instanceof InitSecretError || err instanceof ResumeProofError) return status.PERMISSION_DENIED
  if (err instanceof BadInitRequestError) return status.INVALID_ARGUMENT
  return status.INTERNAL
}

/**
 * Waits for flow control, so a long log never piles up in memory; a caller that went away ends the
 * wait. True when the message went out on a call that is still open.
 */
function write(call: InitCall, msg: InitResponse): Promise<boolean> {
  return new Promise((resolve) => {
    if (call.cancelled) return resolve(false)
    if (call.write(msg)) return resolve(!call.cancelled)
    const done = () => {
      call.off('drain', done)
      call.off('cancelled', done)
      resolve(!call.cancelled)
    }
    call.once('drain', done)
    call.once('cancelled', done)
  })
}
