/** Waiting for a cluster's processes, with the tail of their log when they do not come. */
import { connect } from 'node:net'
import { access, readFile } from 'node:fs/promises'
import type { Daemon } from './daemons.js'

const LOG_TAIL_LINES = 15

/** The last lines of a process's log, to say why it did not come up. */
export async function logTail(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '')
  const lines = text.trimEnd().split('\n').slice(-LOG_TAIL_LINES)
  return lines.length && lines[0] ? `${file} ends with:\n  ${lines.join('\n  ')}` : `${file} is empty`
}

const connects = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port, timeout: 1_000 })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
  })

export interface PortWait {
  what: string
  log: string
  timeoutMs?: number
  /** True, or what happened, once waiting is pointless (the process exited). */
  gaveUp?: () => boolean | string
}

/** For waitForPort's gaveUp: once `daemon` ended, that it did and how; false while it runs. */
export const endedEarly = (daemon: Daemon) => () => {
  const ending = daemon.ending()
  return ending ? `ended (${ending}) before it listened` : false
}

export async function waitForPort(host: string, port: number, w: PortWait): Promise<void> {
  const deadline = Date.now() + (w.timeoutMs ?? 60_000)
  for (;;) {
    if (await connects(host, port)) return
    const gaveUp = w.gaveUp?.()
    if (gaveUp || Date.now() > deadline) {
      const what = typeof gaveUp === 'string' ? gaveUp : 'did not listen'
      throw new Error(`${w.what} ${what} on ${host}:${port}\n${await logTail(w.log)}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Resolves once the process exits 0; rejects on another exit, at the deadline or on `signal`. */
export async function waitForExit(
  daemon: Daemon,
  w: { what: string; log: string; timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  let onAbort: (() => void) | undefined
  const outcome = await Promise.race([
    daemon.exited.then((code) => ({ code })),
    new Promise<{ timedOut: true }>((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), w.timeoutMs)
    }),
    new Promise<{ aborted: true }>((resolve) => {
      onAbort = () => resolve({ aborted: true })
      if (w.signal?.aborted) onAbort()
      else w.signal?.addEventListener('abort', onAbort, { once: true })
    }),
  ]).finally(() => {
    clearTimeout(timer)
    // One signal serves every wait of a `mini up` (two per node): a listener left behind per wait
    // is a leak, and Node warns about it from the 11th on.
    if (onAbort) w.signal?.removeEventListener('abort', onAbort)
  })
  if ('code' in outcome && outcome.code === 0) return
  const why =
    'code' in outcome
      ? `exited ${outcome.code ?? 'on a signal'}`
      : 'timedOut' in outcome
        ? `is not done after ${Math.round(w.timeoutMs / 1000)} s`
        : 'was interrupted'
  throw new Error(`${w.what} ${why}\n${await logTail(w.log)}`)
}

/** Resolves once a unix socket accepts a connection (a daemon that listens on one is up). */
export async function waitForSocket(socketPath: string, w: PortWait): Promise<void> {
  const deadline = Date.now() + (w.timeoutMs ?? 30_000)
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(socketPath)
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (up) return
    if (w.gaveUp?.() || Date.now() > deadline)
      throw new Error(`${w.what} did not listen on ${socketPath}\n${await logTail(w.log)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Resolves once `file` exists. */
export async function waitForFile(file: string, w: PortWait): Promise<void> {
  const deadline = Date.now() + (w.timeoutMs ?? 30_000)
  while (
    !(await access(file).then(
      () => true,
      () => false,
    ))
  ) {
    if (w.gaveUp?.() || Date.now() > deadline)
      throw new Error(`${w.what} did not create ${file}\n${await logTail(w.log)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
