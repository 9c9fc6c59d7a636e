/**
 * A server of a bench in a process of its own (bench/backup-apiserver.ts, bench/key-service-process.ts),
 * so that its CPU is measured apart from the process under test: it prints one JSON line on stdout
 * when it serves, and stops when its stdin closes.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'

export interface ServingChild<T> {
  /** What the child printed once it served. */
  ready: T
  /** The CPU time (user + system) it has used so far, in ms. */
  cpuMs(): Promise<number>
  stop(): Promise<void>
}

/** Starts `node --import tsx SCRIPT ARGS…` and waits for its first line. */
export async function startServingChild<T>(script: string, args: string[] = []): Promise<ServingChild<T>> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const line = await new Promise<string>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`${script} exited ${code}`)))
    createInterface({ input: child.stdout }).once('line', resolve)
  })
  const pid = child.pid ?? NaN
  return {
    ready: JSON.parse(line) as T,
    cpuMs: () => processCpuMs(pid),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve())
        child.stdin.end()
      }),
  }
}

/** CPU time (user + system) the process `pid` has used, in ms, from /proc (USER_HZ is 100). */
export async function processCpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // utime + stime: fields 14 and 15 of stat
}
