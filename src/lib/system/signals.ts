/**
 * SIGINT and SIGTERM, for operator commands and node daemons alike. A node daemon ends the same way
 * whichever it is (bootstrapper, verification service, and the join and key services to come).
 */
import { exitAfterGrace } from './exit.js'

/** The exit codes shells expect after these signals (128 + the signal's number). */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const
export type InterruptSignal = keyof typeof SIGNAL_EXIT_CODES
const SIGNALS = Object.keys(SIGNAL_EXIT_CODES) as InterruptSignal[]

/** The process's signals and its exit; tests record them instead. */
export interface SignalIo {
  on: (signal: InterruptSignal, listener: () => void) => void
  off: (signal: InterruptSignal, listener: () => void) => void
  /** Exits at once. */
  exit: (code: number) => void
}

// One object for the process: claims are grouped by the io's `on`, and every caller must land in
// the same group, or two handlers would both act on one Ctrl-C.
const PROCESS_SIGNAL_IO: SignalIo = {
  on: (s, l) => process.on(s, l),
  off: (s, l) => process.off(s, l),
  exit: (code) => process.exit(code),
}
export const processSignalIo = (): SignalIo => PROCESS_SIGNAL_IO

/** What a claim does with a signal (the first, and any later one while it is still the owner). */
export type InterruptClaim = (signal: InterruptSignal) => void

interface ClaimStack {
  claims: InterruptClaim[]
  listeners: ReadonlyArray<{ signal: InterruptSignal; listener: () => void }>
}
const stacks = new WeakMap<SignalIo['on'], ClaimStack>()

/**
 * Makes `claim` the only handler of SIGINT and SIGTERM until the returned function is called.
 * Claims nest: a command's default ("status interrupted: nothing was changed") sits below what a
 * flow claims while it runs (init's own account, mini up's cleanup), and only the innermost acts,
 * so a Ctrl-C is never answered twice, nor with an exit behind the back of a cleanup. The process
 * gets one listener per signal, however deep the claims go.
 */
export function claimInterrupts(claim: InterruptClaim, io: SignalIo = processSignalIo()): () => void {
  let stack = stacks.get(io.on)
  if (!stack) {
    const claims: InterruptClaim[] = []
    const listeners = SIGNALS.map((signal) => ({ signal, listener: () => claims.at(-1)?.(signal) }))
    stack = { claims, listeners }
    stacks.set(io.on, stack)
  }
  const { claims, listeners } = stack
  if (claims.length === 0) for (const { signal, listener } of listeners) io.on(signal, listener)
  claims.push(claim)
  let released = false
  return () => {
    if (released) return
    released = true
    claims.splice(claims.lastIndexOf(claim), 1)
    if (claims.length === 0) for (const { signal, listener } of listeners) io.off(signal, listener)
  }
}

export interface DaemonSignalIo extends SignalIo {
  /** Exits with process.exitCode once a grace has passed, unless the process ended before. */
  exitAfterGrace: () => void
}

const processDaemonSignalIo = (): DaemonSignalIo => ({ ...processSignalIo(), exitAfterGrace })

/** What every node daemon offers its entry point. */
export interface NodeDaemon {
  /** Serves; resolves once listening. */
  start(): Promise<unknown>
  /** Lets work in flight finish within the daemon's own grace; idempotent. */
  stop(): Promise<void>
  /** Resolves once the daemon stopped, by itself or through stop(). */
  readonly done: Promise<void>
}

/**
 * Until the returned function is called, the first SIGINT/SIGTERM calls the daemon's graceful stop
 * (once) and exits a grace after it stopped, so that nothing left open (a connect the kernel still
 * retries) outlives it; a second signal exits at once with 130/143.
 */
export function stopOnSignals(
  daemon: Pick<NodeDaemon, 'stop'>,
  io: DaemonSignalIo = processDaemonSignalIo(),
): () => void {
  let stopping = false
  return claimInterrupts((signal) => {
    if (stopping) return io.exit(SIGNAL_EXIT_CODES[signal])
    stopping = true
    void daemon.stop().finally(() => io.exitAfterGrace())
  }, io)
}

/** Starts the daemon and resolves once it stopped; signals stop it as stopOnSignals says. */
export async function serveUntilStopped(daemon: NodeDaemon, io?: DaemonSignalIo): Promise<void> {
  const release = stopOnSignals(daemon, io)
  try {
    await daemon.start()
    await daemon.done
  } finally {
    release()
  }
}

/**
 * An AbortSignal aborted at the first SIGINT or SIGTERM (its reason is the signal's name), for a
 * command that stops what it is doing and cleans up itself; a second signal exits at once (130/143).
 * `release()` hands the signals back.
 */
export function abortOnInterrupt(io: SignalIo = processSignalIo()): { signal: AbortSignal; release(): void } {
  const stop = new AbortController()
  const release = claimInterrupts((signal) => {
    if (stop.signal.aborted) return io.exit(SIGNAL_EXIT_CODES[signal])
    stop.abort(signal)
  }, io)
  return { signal: stop.signal, release }
}
