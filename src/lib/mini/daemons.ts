/**
 * The processes of a local cluster. Each is started detached (it outlives `mini up`) with two
 * marker variables in its environment, which every process it starts inherits (systemd's services,
 * kubeadm, swtpm). `mini down` finds them by those markers in /proc, so it needs no pid file that a
 * crash could have left half written, and it also finds what a service started on its own.
 */
import { spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'

export const CLUSTER_MARKER = 'CONSTELL_MINI_CLUSTER'
export const NODE_MARKER = 'CONSTELL_MINI_NODE'

export interface DaemonSpec {
  argv: readonly string[]
  env: NodeJS.ProcessEnv
  /** stdout and stderr are appended here. */
  logFile: string
  cwd?: string
  /** The caller waits for its exit (it keeps this process alive until then); others are let go. */
  awaited?: boolean
}

export interface Daemon {
  pid: number
  /** Resolves with the exit code (null after a signal) while this process is the parent. */
  exited: Promise<number | null>
  /** How it ended, once it has ("exit code 1", "signal SIGKILL", "could not start: …"). */
  ending(): string | undefined
}

export function startDaemon(spec: DaemonSpec): Daemon {
  const [file, ...args] = spec.argv
  if (!file) throw new Error('startDaemon: empty argv')
  const log = openSync(spec.logFile, 'a', 0o600)
  try {
    const child = spawn(file, args, {
      detached: true,
      env: spec.env,
      cwd: spec.cwd,
      stdio: ['ignore', log, log],
    })
    let ending: string | undefined
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('error', (err) => {
        ending = `could not start: ${err.message}`
        reject(err)
      })
      child.once('exit', (code, signal) => {
        ending = signal ? `signal ${signal}` : `exit code ${code}`
        resolve(code)
      })
    })
    exited.catch(() => {}) // a caller that never awaits it must not crash the process
    if (!spec.awaited) child.unref()
    if (child.pid === undefined) throw new Error(`could not start ${file}`)
    return { pid: child.pid, exited, ending: () => ending }
  } finally {
    closeSync(log)
  }
}

/** Pids of the other processes (not this one), as /proc lists them. */
async function otherPids(): Promise<number[]> {
  return (await readdir('/proc')).map(Number).filter((pid) => Number.isInteger(pid) && pid !== process.pid)
}

/** The value of `name` in a process's environment; undefined when it is not set or the process is gone. */
async function variableOf(pid: number, name: string): Promise<string | undefined> {
  const environ = await readFile(`/proc/${pid}/environ`).catch(() => undefined)
  // a whole variable (NUL-separated): the name of another one that merely starts alike does not count
  return environ
    ?.toString('utf8')
    .split('\0')
    .find((v) => v.startsWith(`${name}=`))
    ?.slice(name.length + 1)
}

/** Pids of running processes whose environment has `name=value`. */
export async function markedProcesses(name: string, value: string): Promise<number[]> {
  const pids: number[] = []
  for (const pid of await otherPids())
    if ((await variableOf(pid, name)) === value && alive(pid)) pids.push(pid)
  return pids
}

/**
 * The values of `name` in the environments of running processes whose command line contains
 * `needle`: which clusters still run processes that use a folder.
 */
export async function markersMentioning(name: string, needle: string): Promise<string[]> {
  const found = new Set<string>()
  for (const pid of await otherPids()) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`).catch(() => undefined)
    if (!cmdline?.includes(needle)) continue
    const value = await variableOf(pid, name)
    if (value) found.add(value)
  }
  return [...found]
}

/**
 * SIGTERM to every marked process (but `except`), SIGKILL to what is left after `graceMs` (at once
 * with 0: a power cut); resolves once all are gone.
 */
export async function stopMarked(
  name: string,
  value: string,
  graceMs = 10_000,
  except: readonly number[] = [],
): Promise<number> {
  const pids = (await markedProcesses(name, value)).filter((pid) => !except.includes(pid))
  for (const pid of pids) signal(pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL')
  const deadline = Date.now() + graceMs
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  for (const pid of pids.filter(alive)) signal(pid, 'SIGKILL')
  while (pids.some(alive)) await new Promise((r) => setTimeout(r, 20))
  // a process that started one more while being stopped (systemctl start mid-shutdown)
  const late = (await markedProcesses(name, value)).filter((pid) => !except.includes(pid))
  if (late.length > 0) return pids.length + (await stopMarked(name, value, graceMs, except))
  return pids.length
}

/** How a supervised process ended. */
export interface GroupExit {
  code: number | null
  signal: NodeJS.Signals | null
}

/**
 * Starts argv as the leader of a process group of its own (its pid is the group's id), under
 * `umask` when given, stdout and stderr appended to `logFile`; the caller keeps it (not unref'd).
 */
export function spawnInGroup(spec: {
  argv: readonly string[]
  env: NodeJS.ProcessEnv
  logFile: string
  umask?: string
}): { pid: number; exited: Promise<GroupExit> } {
  const [file, ...args] = spec.argv
  if (!file) throw new Error('spawnInGroup: empty argv')
  // as systemd's UMask=: the shell sets it and execs the command, which stays the group's leader
  const [command, argv] = spec.umask
    ? ['/bin/sh', ['-c', `umask ${spec.umask} && exec "$@"`, 'sh', file, ...args]]
    : [file, args]
  const log = openSync(spec.logFile, 'a', 0o600)
  try {
    const child = spawn(command, argv, { detached: true, env: spec.env, stdio: ['ignore', log, log] })
    const exited = new Promise<GroupExit>((resolve) => {
      child.once('error', () => resolve({ code: 127, signal: null }))
      child.once('exit', (code, sig) => resolve({ code, signal: sig }))
    })
    if (child.pid === undefined) return { pid: -1, exited }
    return { pid: child.pid, exited }
  } finally {
    closeSync(log)
  }
}

/** Signals process group `pgid`; a group that is gone is not an error. */
export function killGroup(pgid: number, sig: NodeJS.Signals): void {
  if (pgid > 1) signal(-pgid, sig)
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig)
  } catch {
    // gone already
  }
}

/** Running and not a zombie (an orphan may wait for a PID 1 that never reaps it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
  } catch {
    return false
  }
}
