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

export const processSignalIo = (): SignalIo => ({
  on: (s, l) => process.on(s, l),
  off: (s, l) => process.off(s, l),
  exit: (code) => process.exit(code),
})

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
  const listeners = SIGNALS.map((signal) => {
    const listener = () => {
      if (stopping) return io.exit(SIGNAL_EXIT_CODES[signal])
      stopping = true
      void daemon.stop().finally(() => io.exitAfterGrace())
    }
    io.on(signal, listener)
    return { signal, listener }
  })
  return () => listeners.forEach(({ signal, listener }) => io.off(signal, listener))
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
 * command that stops what it is doing and cleans up itself; `release()` hands the signals back.
 */
export function abortOnInterrupt(): { signal: AbortSignal; release(): void } {
  const stop = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => stop.abort(signal)
  for (const signal of SIGNALS) process.once(signal, onSignal)
  return {
    signal: stop.signal,
    release: () => {
      for (const signal of SIGNALS) process.off(signal, onSignal)
    },
  }
}
