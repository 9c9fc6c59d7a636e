/**
 * Watching a node boot, from outside it: `mini up` and `mini reboot` only start a node's supervisor
 * and read what it reports (boot.json) and what its units log, to say what the node waits for
 * (its TPM, its disk key from a join service, `constellation recover`, bootstrap run) and why a join
 * service refused it. The node boots whether anyone watches or not.
 */
import { open } from 'node:fs/promises'
import { CliError, ExitCode } from '../errors/index.js'
import { SIGNAL_EXIT_CODES, type InterruptSignal } from '../system/index.js'
import { alive } from './daemons.js'
import { readBootStatus, type BootStatus } from './machine.js'
import { UNIT_LOGS, type NodeBoot } from './node-boot.js'
import { logTail } from './wait.js'

const POLL_MS = 200
const STATE_DISK = 'constellation-state-disk.service' as const
const BOOTSTRAPPER = 'constellation-bootstrapper.service' as const

export interface BootWatchOptions {
  timeoutMs: number
  signal?: AbortSignal
  /** A line for the operator: why a join service refused the node (each reason once). */
  progress?: (line: string) => void
  /** Also a line for each thing the node waits for that may take long (disk key, recover, joining). */
  announceWaits?: boolean
  /** A reboot: bootstrap run only starts the node's services again (else it initializes or joins). */
  rebooted?: boolean
  /** How the operator gives this node its disk key when no join service can: the recover command. */
  recoverCommand: string
}

const BRIEF = {
  supervisor: 'its supervisor to start',
  tpm: 'its TPM (swtpm)',
  disk: 'state-disk setup',
} as const
/** Waits that last a moment on every boot: named when a timeout ends them, not announced. */
const BRIEF_WAITS = new Set<string>(Object.values(BRIEF))

/** What a node waits for and what refused it, as its logs tell. */
interface Observed {
  waitingFor: string
  refusal?: string
  /** Refusals and unreachable join services seen since the last look, one line each. */
  news: string[]
}

/** A join service that did not answer, as opposed to one that refused the node. */
const UNREACHABLE =
  /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ECONNRESET|UNAVAILABLE|No connection established|not reachable|timed out|deadline/i

/** The node is not back in time; it keeps booting on its own. */
export class NodeBootTimeoutError extends CliError {
  constructor(
    readonly node: string,
    readonly waitingFor: string,
    timeoutMs: number,
    refusal?: string,
  ) {
    super(
      `${node} is not back after ${formatSeconds(timeoutMs)}: it is waiting for ${waitingFor}${refusal ? `; last refusal: ${refusal}` : ''}`,
      { exitCode: ExitCode.Failure, data: { node, waitingFor, ...(refusal && { refusal }) } },
    )
    this.name = 'NodeBootTimeoutError'
  }
}

/** The one who waited was interrupted; the node keeps booting on its own. */
export class NodeBootInterruptedError extends CliError {
  constructor(
    readonly node: string,
    readonly waitingFor: string,
    readonly signal: InterruptSignal,
  ) {
    super(`interrupted (${signal}) while ${node} was waiting for ${waitingFor}`, {
      exitCode: SIGNAL_EXIT_CODES[signal],
    })
    this.name = 'NodeBootInterruptedError'
  }
}

/** The node cannot come up in this boot: a unit failed, its TPM did not start, its supervisor died. */
export class NodeBootFailedError extends CliError {
  constructor(message: string) {
    super(message)
    this.name = 'NodeBootFailedError'
  }
}

/**
 * Resolves once the boot's `bootstrap run` is done (initialized, joined, or started a rebooted
 * node's services); rejects with one of the errors above.
 */
export async function waitUntilBooted(boot: NodeBoot, opts: BootWatchOptions): Promise<void> {
  const name = boot.node.name
  const deadline = Date.now() + opts.timeoutMs
  const logs = new LogFollower(boot)
  const seen = new Set<string>()
  let observed: Observed = { waitingFor: BRIEF.supervisor, news: [] }
  const say = (line: string) => {
    if (seen.has(line)) return
    seen.add(line)
    opts.progress?.(`${name}: ${line}`)
  }
  for (;;) {
    const status = await readBootStatus(boot.files.bootStatus).catch(() => undefined)
    const current = status?.bootId === boot.bootId ? status : undefined
    if (current?.units[BOOTSTRAPPER]?.state === 'exited') return
    const failure = current ? await failureOf(boot, current) : undefined
    if (failure) throw new NodeBootFailedError(failure)
    if (!alive(boot.supervisorPid))
      throw new NodeBootFailedError(
        `${name} went off while booting: its supervisor is gone (powered off by another command, or it crashed)\n${await logTail(boot.files.log('supervisor'))}`,
      )
    observed = await logs.observe(current, observed, opts)
    if (opts.announceWaits && !BRIEF_WAITS.has(observed.waitingFor)) say(`waiting for ${observed.waitingFor}`)
    for (const line of observed.news) say(line)
    if (opts.signal?.aborted)
      throw new NodeBootInterruptedError(
        name,
        observed.waitingFor,
        opts.signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT',
      )
    if (Date.now() > deadline)
      throw new NodeBootTimeoutError(name, observed.waitingFor, opts.timeoutMs, observed.refusal)
    await pause(POLL_MS, opts.signal)
  }
}

async function failureOf(boot: NodeBoot, status: BootStatus): Promise<string | undefined> {
  const name = boot.node.name
  if (status.tpm.state === 'failed')
    return `${name}'s TPM did not come up: ${status.tpm.message ?? ''}\n${await logTail(boot.files.log('swtpm'))}`
  if (status.state === 'stopping' || status.state === 'off')
    return `${name} was powered off while booting (another mini reboot, or mini down)`
  for (const unit of [STATE_DISK, BOOTSTRAPPER] as const) {
    const u = status.units[unit]
    if (u?.state === 'failed')
      return `${name}'s ${unit} failed: ${u.message ?? 'see its log'}\n${await logTail(boot.files.log(UNIT_LOGS[unit]))}`
  }
  return undefined
}

/** Reads what the state-disk and bootstrapper units logged in this boot, as it is written. */
class LogFollower {
  private readonly offsets: Record<string, number>
  private readonly partial: Record<string, string> = {}
  private diskWait?: string

  constructor(private readonly boot: NodeBoot) {
    this.offsets = { ...boot.logStart }
  }

  async observe(status: BootStatus | undefined, last: Observed, opts: BootWatchOptions): Promise<Observed> {
    const recover = `\`${opts.recoverCommand}\``
    const own = this.boot.node.address
    let refusal = last.refusal
    const news: string[] = []
    for (const log of [UNIT_LOGS[STATE_DISK], UNIT_LOGS[BOOTSTRAPPER]])
      for (const entry of await this.newEntries(log)) {
        const msg = typeof entry.msg === 'string' ? entry.msg : ''
        const endpoint = typeof entry.endpoint === 'string' ? entry.endpoint : undefined
        if (msg.startsWith('Waiting for the state disk key')) {
          // its own join service is down while it boots: only another control plane can answer
          const others = (Array.isArray(entry.joinServices) ? entry.joinServices : [])
            .map(String)
            .filter((e) => hostOf(e) !== own)
          this.diskWait =
            others.length > 0
              ? `its disk key from a join service (${others.join(', ')}) or ${recover}`
              : `${recover}: no other control plane is up to give it its disk key`
        } else if (msg.startsWith('No join service to ask')) {
          this.diskWait = `${recover}: no other control plane is up to give it its disk key`
        } else if (msg.startsWith('Metadata service not reachable')) {
          this.diskWait = 'the metadata service'
        } else if ((entry.level === 'warn' || entry.level === 'error') && typeof entry.reason === 'string') {
          if (endpoint && hostOf(endpoint) === own) continue
          const reason = oneLine(entry.reason)
          const service = endpoint ? `the join service at ${endpoint}` : 'a join service'
          if (UNREACHABLE.test(reason)) news.push(`${service} does not answer yet (${reason})`)
          else {
            refusal = `${service} refused it: ${reason}`
            news.push(`refused: ${refusal}`)
          }
        }
      }
    return { waitingFor: this.waitingFor(status, opts), news, ...(refusal && { refusal }) }
  }

  private waitingFor(status: BootStatus | undefined, opts: BootWatchOptions): string {
    if (!status) return BRIEF.supervisor
    if (status.tpm.state === 'starting') return BRIEF.tpm
    const disk = status.units[STATE_DISK]?.state
    if (!disk || disk === 'waiting' || disk === 'starting' || disk === 'inactive')
      return this.diskWait ?? BRIEF.disk
    return opts.rebooted ? 'bootstrap run to start its services again' : 'bootstrap run (init or join)'
  }

  /** JSON lines appended to `log` since the last call (a line written half is kept for the next). */
  private async newEntries(log: string): Promise<Array<Record<string, unknown>>> {
    const file = this.boot.files.log(log)
    const handle = await open(file, 'r').catch(() => undefined)
    if (!handle) return []
    let text: string
    try {
      const { size } = await handle.stat()
      const from = this.offsets[log] ?? 0
      if (size <= from) return []
      const buf = Buffer.alloc(size - from)
      await handle.read(buf, 0, buf.length, from)
      this.offsets[log] = size
      text = (this.partial[log] ?? '') + buf.toString('utf8')
    } finally {
      await handle.close()
    }
    const lines = text.split('\n')
    this.partial[log] = lines.pop() ?? ''
    const entries: Array<Record<string, unknown>> = []
    for (const line of lines)
      try {
        const entry = JSON.parse(line) as unknown
        if (entry && typeof entry === 'object') entries.push(entry as Record<string, unknown>)
      } catch {
        // not a log line of ours (a child's stray output): nothing to read from it
      }
    return entries
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
  })
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').trim()
/** The host of HOST:PORT (IPv6 in brackets). */
const hostOf = (endpoint: string) => endpoint.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1')

const formatSeconds = (ms: number) =>
  ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`
