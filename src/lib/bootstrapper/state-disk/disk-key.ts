/**
 * A rebooted node's disk key, from whichever source answers first (Constellation's disk-mapper):
 * any join service (IssueRejoinTicket, asked in rounds with backoff) or the operator's
 * `constellation recover` (the master secret, through the node's recovery endpoint). A key counts
 * only once cryptsetup confirmed that it opens this disk.
 */
import { chainMessage } from '../../errors/index.js'
import { ClusterKms } from '../../kms/index.js'
import { RecoveryRefusedError } from '../../statedisk/index.js'
import { retry, type Logger } from '../../system/index.js'
import { DEFAULT_JOIN_RETRY, type JoinRetrySettings } from '../join/join-client.js'
import {
  isRefusedConnection,
  JoinRoundsLog,
  type RejoinTicketRequester,
} from '../join/join-ticket-request.js'

export interface DiskKeys {
  diskKey: Buffer
  measurementSecret: Buffer
  /** Where they came from, for the log: a join service's HOST:PORT, or "recovery". */
  source: string
}

/** The node's recovery endpoint, started while the node waits and stopped once it has its key. */
export interface RecoveryEndpoint {
  start(): Promise<string>
  stop(): Promise<void>
}

export interface DiskKeyDeps {
  /** Lower case, as the disk key was derived. */
  diskUuid: string
  /** True when cryptsetup opens the disk with this key (`open --test-passphrase`). */
  opensWith: (key: Buffer) => Promise<boolean>
  /** Join services to ask, in order (staticJoinEndpoints); may be empty. */
  endpoints: readonly string[]
  requestRejoinTicket: RejoinTicketRequester
  /** Builds the recovery endpoint around the node's check of an offered master secret. */
  recoveryEndpoint: (recover: (master: { key: Buffer; salt: Buffer }) => Promise<void>) => RecoveryEndpoint
  log: Logger
  retry?: JoinRetrySettings
  signal: AbortSignal
}

class NoRejoinTicketError extends Error {
  constructor(
    message: string,
    /** Every endpoint refused the connection: no join service runs (the control planes are down too). */
    readonly nothingListens: boolean,
  ) {
    super(message)
  }
}

const isNothingListening = (err: unknown): boolean => err instanceof NoRejoinTicketError && err.nothingListens

export async function acquireDiskKey(deps: DiskKeyDeps): Promise<DiskKeys> {
  const { log } = deps
  const done = new AbortController()
  const signal = AbortSignal.any([deps.signal, done.signal])
  let settle!: (keys: DiskKeys) => void
  const acquired = new Promise<DiskKeys>((resolve) => (settle = resolve))
  let taken = false
  /** Checks a key against the disk; the first one that opens it wins. */
  const offer = async (keys: DiskKeys): Promise<boolean> => {
    if (taken || !(await deps.opensWith(keys.diskKey)) || taken) return false
    taken = true
    settle(keys)
    return true
  }

  const recovery = deps.recoveryEndpoint(async (master) => {
    if (taken) throw new RecoveryRefusedError('this node has its disk key already; nothing to recover')
    const kms = new ClusterKms(master.key, master.salt)
    const keys = { diskKey: kms.diskKey(deps.diskUuid), measurementSecret: kms.measurementSecret() }
    if (!(await offer({ ...keys, source: 'recovery' })))
      throw new RecoveryRefusedError(
        `the master secret does not open this node's state disk ${deps.diskUuid}; the disk stays closed`,
      )
  })
  const address = await recovery.start()
  log.info('Waiting for the state disk key: asking the join services, and serving recovery', {
    diskUUID: deps.diskUuid,
    joinServices: deps.endpoints,
    recovery: address,
  })
  const asking = askJoinServices(deps, offer, signal).catch((err: unknown) => {
    if (!signal.aborted) log.error('Asking the join services failed', { error: chainMessage(err) })
  })
  const stopped = new Promise<never>((_resolve, reject) => {
    deps.signal.addEventListener('abort', () => reject(deps.signal.reason as Error), { once: true })
    if (deps.signal.aborted) reject(deps.signal.reason as Error)
  })
  try {
    return await Promise.race([acquired, stopped])
  } finally {
    done.abort(new Error('the disk key search ended'))
    await Promise.all([asking, recovery.stop()])
  }
}

/** Rounds over every join service until one hands out a key that opens the disk. */
async function askJoinServices(
  deps: DiskKeyDeps,
  offer: (keys: DiskKeys) => Promise<boolean>,
  signal: AbortSignal,
): Promise<void> {
  if (deps.endpoints.length === 0) {
    deps.log.info('No join service to ask (no control-plane peers); waiting for `constellation recover`')
    return
  }
  const settings = deps.retry ?? DEFAULT_JOIN_RETRY
  const rounds = new JoinRoundsLog(deps.log, 'No disk key from this join service')
  await retry(
    async () => {
      const reasons: string[] = []
      let refusedConnections = 0
      for (const endpoint of deps.endpoints) {
        signal.throwIfAborted()
        const failure = await askOne(deps, endpoint, offer, signal)
        if (failure === undefined) return
        if (typeof failure !== 'string' && isRefusedConnection(failure.err)) refusedConnections++
        const reason = typeof failure === 'string' ? failure : rounds.failure(endpoint, failure.err)
        reasons.push(`${endpoint}: ${reason}`)
      }
      throw new NoRejoinTicketError(
        `no join service gave this node its disk key: ${reasons.join('; ')}`,
        refusedConnections === deps.endpoints.length,
      )
    },
    {
      attempts: Number.POSITIVE_INFINITY,
      ...settings,
      retryable: (err) => err instanceof NoRejoinTicketError,
      steady: isNothingListening,
      signal,
      onRetry: (err, attempt, delayMs) =>
        rounds.roundFailed(isNothingListening(err), attempt, () =>
          deps.log.info('Asking the join services again', { attempt, delayMs }),
        ),
    },
  )
}

/** Undefined when this join service's key opened the disk; otherwise why not, or what it failed with. */
async function askOne(
  deps: DiskKeyDeps,
  endpoint: string,
  offer: (keys: DiskKeys) => Promise<boolean>,
  signal: AbortSignal,
): Promise<string | { err: unknown } | undefined> {
  try {
    const ticket = await deps.requestRejoinTicket(endpoint, { diskUuid: deps.diskUuid }, signal)
    const keys = {
      diskKey: ticket.stateDiskKey,
      measurementSecret: ticket.measurementSecret,
      source: endpoint,
    }
    if (await offer(keys)) return undefined
    if (signal.aborted) throw signal.reason
    deps.log.error("The join service's disk key does not open this disk", { endpoint })
    return 'its disk key does not open this disk'
  } catch (err) {
    signal.throwIfAborted()
    return { err }
  }
}
