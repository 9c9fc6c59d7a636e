/**
 * A mini node's "systemd": one process per node that lives as long as the node is powered on, so
 * its boot does not depend on the command that powered it on. Power-on: /run is emptied, the TPM
 * (swtpm) comes up, then the node's enabled units start in their order (state-disk setup, then the
 * bootstrapper and the verification service, on a rebooted control plane the key and join
 * services), restarted as their Restart= says; `systemctl start` from a service reaches it through
 * its socket. Power-off in order (stop()): every unit stops (its KillSignal to its process group,
 * SIGKILL after TimeoutStopSec), the TPM gets TPM2_Shutdown as an operating system sends it, then
 * swtpm stops. A power cut is everything SIGKILLed at once, by `mini reboot --hard`.
 */
import { readdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Server } from 'node:net'
import { existsSync } from 'node:fs'
import { messageOf } from '../errors/index.js'
import { writeSecretFile, type Logger } from '../system/index.js'
import {
  writeBootStatus,
  type BootStatus,
  type MachineCvm,
  type MachineSpec,
  type UnitState,
} from './machine.js'
import type { MachineBoot } from './measured-boot.js'
import { serveSystemctl, SystemctlError } from './systemctl-socket.js'
import { parseUnitFile, type UnitSpec } from './units.js'

/** systemd's DefaultStartLimitIntervalSec / DefaultStartLimitBurst. */
const START_LIMIT_INTERVAL_MS = 10_000
const START_LIMIT_BURST = 5
/** Exit signals Restart=on-failure treats as a clean end, as systemd does. */
const CLEAN_SIGNALS = new Set(['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGPIPE'])
const TPM_READY_TIMEOUT_MS = 10_000
const TPM_STOP_GRACE_MS = 5_000

export interface ProcessExit {
  code: number | null
  signal: NodeJS.Signals | null
}
export interface GroupProcess {
  /** Also its process group's id. */
  pid: number
  exited: Promise<ProcessExit>
}

/** What the supervisor needs of the outside world (wired in src/mini-node.ts). */
export interface SupervisorDeps {
  /** Starts argv as the leader of a new process group, stdout and stderr appended to logFile. */
  spawn(spec: {
    argv: readonly string[]
    env: NodeJS.ProcessEnv
    logFile: string
    umask?: string
  }): GroupProcess
  /** Signals a process group; one that is gone is not an error. */
  killGroup(pgid: number, signal: NodeJS.Signals): void
  /**
   * Stops what the node's processes left behind (found by the node's marker, as mini down finds
   * them), sparing the given pids; the supervisor's cgroup, in effect.
   */
  sweep(except: readonly number[]): Promise<number>
  /** True once the TPM's command socket accepts a connection. */
  tpmAccepts(socket: string): Promise<boolean>
  /** A CVM node's hardware stand-in (configfs-tsm), up while the node is powered on. */
  startCvm?(cvm: MachineCvm): Promise<{ stop(): Promise<void> }>
  /** The node's measured boot through the TPM's command socket: PCRs extended, the event log written. */
  measureBoot?(boot: MachineBoot, tpmSocket: string): Promise<void>
  /** TPM2_Shutdown(CLEAR) through the TPM's command socket. */
  shutdownTpm(socket: string): Promise<void>
  sleep(ms: number): Promise<void>
  /** The environment every unit gets (markers, PATH with the simulator's systemctl). */
  env: NodeJS.ProcessEnv
  log: Logger
  bootId: string
  pid: number
}

interface UnitRun {
  spec?: UnitSpec
  /** Why the unit file could not be read. */
  broken?: string
  state: UnitState
  proc?: GroupProcess
  exitCode?: number | null
  signal?: string | null
  restarts: number
  starts: number[]
  message?: string
  since: string
  job?: Promise<void>
  restartTimer?: NodeJS.Timeout
}

export class NodeSupervisor {
  private readonly units = new Map<string, UnitRun>()
  private readonly status: BootStatus
  private control?: Server
  private tpm?: GroupProcess
  private cvm?: { stop(): Promise<void> }
  private stopping?: Promise<void>
  private statusWrite = Promise.resolve()
  private markDone!: () => void
  readonly done = new Promise<void>((resolve) => (this.markDone = resolve))

  constructor(
    private readonly machine: MachineSpec,
    private readonly deps: SupervisorDeps,
  ) {
    this.status = {
      bootId: deps.bootId,
      supervisorPid: deps.pid,
      state: 'booting',
      tpm: { state: 'starting' },
      units: {},
      updatedAt: new Date().toISOString(),
    }
  }

  /**
   * Powers the node on; resolves once its TPM is up and its boot units are on their way (the boot
   * itself goes on in the background: state-disk setup may wait for a key for as long as it takes).
   */
  async start(): Promise<void> {
    // first: a second supervisor of this node fails here, before it touches anything
    this.control = await serveSystemctl(this.machine.control, {
      start: (u) => this.startUnits(u),
      restart: (u) => this.restartUnits(u),
    })
    for (const dir of this.machine.volatile) await rm(dir, { recursive: true, force: true })
    await this.loadUnits()
    this.publish()
    this.deps.log.info('Powered on', { node: this.machine.node, bootId: this.deps.bootId })
    if (!(await this.startTpm())) return this.statusWrite
    if (!(await this.measureBoot())) return this.statusWrite
    if (!(await this.startCvm())) return this.statusWrite
    const boot = [...this.units].filter(([, u]) => u.spec?.startsAtBoot).map(([name]) => name)
    this.deps.log.info('Starting the boot units', { units: boot })
    void this.startUnits(boot)
      .catch((err: unknown) => this.deps.log.error('Boot', { error: messageOf(err) }))
      .finally(() => {
        if (this.status.state !== 'booting') return
        this.status.state = 'up'
        this.publish()
      })
    await this.statusWrite
  }

  /** Orderly power-off: units stop, TPM2_Shutdown, swtpm stops; idempotent, resolves when off. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.status.state = 'stopping'
      this.publish()
      this.deps.log.info('Powering off: stopping every unit, then the TPM')
      this.control?.close()
      for (const run of this.units.values()) clearTimeout(run.restartTimer)
      await Promise.all([...this.units].map(([name, run]) => this.stopUnit(name, run)))
      const swept = await this.deps.sweep([this.deps.pid, ...(this.tpm ? [this.tpm.pid] : [])])
      if (swept > 0) this.deps.log.info('Stopped what the units left behind', { processes: swept })
      await this.stopTpm()
      await this.cvm?.stop()
      for (const [name, run] of this.units) if (run.state !== 'failed') this.setState(name, run, 'inactive')
      this.status.state = 'off'
      this.publish()
      await this.statusWrite
      this.deps.log.info('Powered off')
      this.markDone()
    })()
    return this.stopping
  }

  /** `systemctl start`: resolves once every unit's start job is done; throws what systemctl says. */
  async startUnits(names: readonly string[]): Promise<void> {
    if (this.stopping) throw new SystemctlError(1, 'the node is powering off')
    for (const name of names)
      if (!this.units.has(name))
        throw new SystemctlError(5, `Failed to start ${name}: Unit ${name} not found.`)
    const transaction = this.pulledIn(names)
    const jobs = new Map([...transaction].map((name) => [name, this.job(name, transaction)]))
    await Promise.all(names.map((name) => jobs.get(name)))
    await this.statusWrite // what systemctl start returns after, boot.json says too
    const failed = names.filter((name) => this.units.get(name)?.state === 'failed')
    if (failed.length > 0)
      throw new SystemctlError(
        1,
        failed
          .map(
            (name) =>
              `Job for ${name} failed: ${this.units.get(name)?.message ?? 'see its log'} (${this.logOf(name)})`,
          )
          .join('\n'),
      )
  }

  /**
   * `systemctl restart`: each unit stops as at power-off (KillSignal, SIGKILL after TimeoutStopSec)
   * and starts again with its start job; a unit that was not running just starts. This is how a
   * replaced binary (the kubelet an upgrade installed) comes into use.
   */
  async restartUnits(names: readonly string[]): Promise<void> {
    if (this.stopping) throw new SystemctlError(1, 'the node is powering off')
    for (const name of names)
      if (!this.units.has(name))
        throw new SystemctlError(5, `Failed to restart ${name}: Unit ${name} not found.`)
    for (const name of names) {
      const run = this.units.get(name)
      if (!run) continue
      await run.job
      this.deps.log.info('Restarting on request', { unit: name })
      await this.stopUnit(name, run)
      // a restart is a fresh start: a stopped unit that had failed or exited starts again
      this.setState(name, run, 'inactive')
    }
    await this.startUnits(names)
  }

  private async loadUnits(): Promise<void> {
    const now = new Date().toISOString()
    for (const name of (await readdir(this.machine.unitDir)).filter((f) => f.endsWith('.service')).sort()) {
      const file = path.join(this.machine.unitDir, name)
      const run: UnitRun = { state: 'inactive', restarts: 0, starts: [], since: now }
      try {
        run.spec = parseUnitFile(name, await readFile(file, 'utf8'), file)
      } catch (err) {
        run.broken = messageOf(err)
        this.deps.log.error('Unit file refused', { unit: name, error: run.broken })
      }
      this.units.set(name, run)
    }
  }

  /** The units `names` pull in through Wants= and Requires= (targets and absent wanted units aside). */
  private pulledIn(names: readonly string[]): Set<string> {
    const all = new Set<string>()
    const visit = (name: string) => {
      if (all.has(name) || !this.units.has(name)) return
      all.add(name)
      const spec = this.units.get(name)?.spec
      for (const dep of [...(spec?.wants ?? []), ...(spec?.requires ?? [])]) visit(dep)
    }
    names.forEach(visit)
    return all
  }

  private job(name: string, transaction: ReadonlySet<string>): Promise<void> {
    const run = this.units.get(name)
    if (!run) return Promise.resolve()
    if (run.job) return run.job
    if (['running', 'exited', 'starting', 'restarting'].includes(run.state)) return Promise.resolve()
    this.setState(name, run, 'waiting')
    run.job = (async () => {
      await null // every job of the transaction exists before any looks for those it is ordered after
      const spec = run.spec
      if (!spec) return this.fail(name, run, `its unit file is refused: ${run.broken ?? ''}`)
      const predecessors = [...transaction].filter(
        (other) =>
          other !== name &&
          (spec.after.includes(other) || (this.units.get(other)?.spec?.before.includes(name) ?? false)),
      )
      await Promise.all(predecessors.map((other) => this.units.get(other)?.job))
      if (this.stopping) return
      const failedDep = spec.requires.find((dep) => this.units.get(dep)?.state === 'failed')
      if (failedDep) return this.fail(name, run, `a unit it requires failed: ${failedDep}`)
      const missing = spec.conditionPathExists.find((p) => !existsSync(p))
      if (missing) {
        run.message = `ConditionPathExists=${missing} was not met`
        this.deps.log.info('Skipped: a condition was not met', { unit: name, path: missing })
        return this.setState(name, run, 'skipped')
      }
      await this.launch(name, run, spec)
    })().finally(() => (run.job = undefined))
    return run.job
  }

  /** Starts the unit's process; a oneshot unit's start job lasts until it ends. */
  private async launch(name: string, run: UnitRun, spec: UnitSpec): Promise<void> {
    const now = Date.now()
    run.starts = run.starts.filter((t) => t > now - START_LIMIT_INTERVAL_MS)
    if (run.starts.length >= START_LIMIT_BURST)
      return this.fail(
        name,
        run,
        `start limit hit: ${START_LIMIT_BURST} starts within ${START_LIMIT_INTERVAL_MS / 1000} s`,
      )
    run.starts.push(now)
    const proc = this.deps.spawn({
      argv: spec.execStart,
      env: { ...this.deps.env, ...spec.environment },
      logFile: this.logOf(name),
      umask: spec.umask,
    })
    run.proc = proc
    // as the simulator's systemctl kept them (bench/mini.bench.ts reads a service's pid there)
    await writeSecretFile(this.pidFile(name), `${proc.pid}\n`, 'replace').catch(() => {})
    run.exitCode = undefined
    run.signal = undefined
    run.message = undefined
    this.deps.log.info('Started', { unit: name, pid: proc.pid })
    this.setState(name, run, spec.type === 'oneshot' ? 'starting' : 'running')
    const ended = proc.exited.then((exit) => this.exited(name, run, proc, exit))
    if (spec.type !== 'oneshot') return
    if (spec.startTimeoutMs === undefined) return ended
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(true), spec.startTimeoutMs)),
    )
    if (await Promise.race([ended.then(() => false), timedOut])) {
      this.deps.log.error('Start timed out', { unit: name, timeoutMs: spec.startTimeoutMs })
      await this.stopUnit(name, run)
      this.fail(name, run, `its start timed out after ${spec.startTimeoutMs} ms`)
    }
    clearTimeout(timer)
  }

  private exited(name: string, run: UnitRun, proc: GroupProcess, exit: ProcessExit): void {
    if (run.proc !== proc) return
    run.proc = undefined
    void rm(this.pidFile(name), { force: true })
    run.exitCode = exit.code
    run.signal = exit.signal
    const spec = run.spec
    this.deps.log.info('Exited', { unit: name, pid: proc.pid, code: exit.code, signal: exit.signal })
    if (!spec || this.stopping || run.state === 'inactive') return this.setState(name, run, 'inactive')
    const success = exit.code === 0 || (exit.code !== null && spec.ignoreFailure)
    const clean = success || (exit.signal !== null && CLEAN_SIGNALS.has(exit.signal))
    if (spec.restart === 'always' || (spec.restart === 'on-failure' && !clean)) {
      run.restarts++
      this.setState(name, run, 'restarting')
      run.restartTimer = setTimeout(() => {
        run.restartTimer = undefined
        if (this.stopping || run.state !== 'restarting') return
        this.deps.log.info('Restarting', { unit: name, restarts: run.restarts })
        void this.launch(name, run, spec)
      }, spec.restartMs)
      return
    }
    if (!clean)
      return this.fail(name, run, exit.code === null ? `killed by ${exit.signal}` : `exited ${exit.code}`)
    this.setState(name, run, success && spec.remainAfterExit ? 'exited' : 'inactive')
  }

  /** KillSignal to the unit's process group, SIGKILL after TimeoutStopSec. */
  private async stopUnit(name: string, run: UnitRun): Promise<void> {
    clearTimeout(run.restartTimer)
    const proc = run.proc
    const spec = run.spec
    if (!['failed', 'skipped', 'exited'].includes(run.state)) this.setState(name, run, 'inactive')
    if (!proc || !spec) return
    this.deps.log.info('Stopping', { unit: name, pid: proc.pid, signal: spec.killSignal })
    this.deps.killGroup(proc.pid, spec.killSignal)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(true), spec.stopTimeoutMs)),
    )
    if (await Promise.race([proc.exited.then(() => false), late])) {
      this.deps.log.warn('Did not stop in time; killing it', { unit: name, timeoutMs: spec.stopTimeoutMs })
      this.deps.killGroup(proc.pid, 'SIGKILL')
      await proc.exited
    }
    clearTimeout(timer)
    // the rest of its process group goes with it at once (what is left elsewhere: sweep)
    this.deps.killGroup(proc.pid, 'SIGKILL')
  }

  /** The CVM's hardware comes with the machine: a node whose stand-in does not start boots nothing. */
  private async startCvm(): Promise<boolean> {
    const { cvm } = this.machine
    if (!cvm) return true
    if (!this.deps.startCvm)
      throw new Error('a CVM machine needs a supervisor that can start its hardware stand-in')
    try {
      this.cvm = await this.deps.startCvm(cvm)
      this.deps.log.info('CVM hardware STAND-IN serving reports', { kind: cvm.kind, tsm: cvm.tsmDir })
      return true
    } catch (err) {
      this.deps.log.error('The CVM hardware stand-in did not start; nothing boots', { error: messageOf(err) })
      return false
    }
  }

  /** As firmware does before the boot loader runs: a node whose boot cannot be measured does not boot. */
  private async measureBoot(): Promise<boolean> {
    const { boot } = this.machine
    if (!boot || !this.deps.measureBoot) return true
    try {
      await this.deps.measureBoot(boot, this.machine.tpm.socket)
      this.deps.log.info('Measured boot: PCRs extended, event log written', { eventLog: boot.eventLog })
      return true
    } catch (err) {
      this.deps.log.error('The measured boot failed; nothing boots', { error: messageOf(err) })
      return false
    }
  }

  private async startTpm(): Promise<boolean> {
    const { tpm } = this.machine
    const proc = this.deps.spawn({
      argv: [
        'swtpm',
        'socket',
        '--tpm2',
        '--server',
        `type=unixio,path=${tpm.socket},mode=0600`,
        '--ctrl',
        `type=unixio,path=${tpm.ctrlSocket},mode=0600`,
        '--tpmstate',
        `dir=${tpm.stateDir}`,
        '--log',
        `file=${tpm.log}`,
        '--flags',
        'not-need-init,startup-clear',
      ],
      env: this.deps.env,
      logFile: tpm.log,
    })
    this.tpm = proc
    let gone = false
    void proc.exited.then((exit) => {
      gone = true
      if (!this.stopping) this.deps.log.error('The TPM (swtpm) exited', { ...exit })
    })
    for (const deadline = Date.now() + TPM_READY_TIMEOUT_MS; !gone && Date.now() < deadline;) {
      if (await this.deps.tpmAccepts(tpm.socket)) {
        this.status.tpm = { state: 'up' }
        this.publish()
        return true
      }
      await this.deps.sleep(20)
    }
    this.status.tpm = {
      state: 'failed',
      message: gone
        ? `swtpm exited (see ${tpm.log})`
        : `swtpm did not listen within ${TPM_READY_TIMEOUT_MS} ms`,
    }
    this.deps.log.error('The TPM did not come up; nothing boots', { error: this.status.tpm.message })
    this.publish()
    return false
  }

  private async stopTpm(): Promise<void> {
    const proc = this.tpm
    if (!proc) return
    if (this.status.tpm.state === 'up')
      try {
        await this.deps.shutdownTpm(this.machine.tpm.socket)
        this.status.tpm = { state: 'shut down' }
        this.deps.log.info(
          'TPM2_Shutdown sent: an orderly shutdown, which counts no dictionary-attack failure',
        )
      } catch (err) {
        this.deps.log.error('TPM2_Shutdown failed', { error: messageOf(err) })
      }
    this.deps.killGroup(proc.pid, 'SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(true), TPM_STOP_GRACE_MS)),
    )
    if (await Promise.race([proc.exited.then(() => false), late])) {
      this.deps.killGroup(proc.pid, 'SIGKILL')
      await proc.exited
    }
    clearTimeout(timer)
    if (this.status.tpm.state !== 'shut down') this.status.tpm = { state: 'off' }
  }

  private fail(name: string, run: UnitRun, message: string): void {
    run.message = message
    this.deps.log.error('Failed', { unit: name, reason: message })
    this.setState(name, run, 'failed')
  }

  private setState(name: string, run: UnitRun, state: UnitState): void {
    run.state = state
    run.since = new Date().toISOString()
    this.publish()
  }

  private pidFile(unit: string): string {
    return path.join(this.machine.journalDir, `${unit}.pid`)
  }

  private logOf(unit: string): string {
    return this.machine.unitLogs[unit] ?? path.join(this.machine.journalDir, `${unit}.log`)
  }

  /** Writes boot.json (one write at a time, the latest state last). */
  private publish(): void {
    for (const [name, run] of this.units)
      this.status.units[name] = {
        state: run.state,
        ...(run.proc && { pid: run.proc.pid }),
        ...(run.exitCode !== undefined && { exitCode: run.exitCode }),
        ...(run.signal && { signal: run.signal }),
        restarts: run.restarts,
        ...(run.message && { message: run.message }),
        since: run.since,
      }
    this.status.updatedAt = new Date().toISOString()
    const snapshot = structuredClone(this.status)
    this.statusWrite = this.statusWrite
      .then(() => writeBootStatus(this.machine.status, snapshot))
      .catch((err: unknown) =>
        this.deps.log.error('Writing the boot status failed', { error: messageOf(err) }),
      )
  }
}
