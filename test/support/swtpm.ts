/** A real swtpm per test: temp state dir, free ports, stopped and removed by stop(). */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, readFile } from 'node:fs/promises'
import { connect, type NetConnectOpts } from 'node:net'
import path from 'node:path'
import { localCaFiles, manufactureTpm, writeLocalCaConfig } from '../../src/lib/mini/tpm-ca.js'
import { createRunner } from '../../src/lib/system/index.js'
import { openSwtpm, openSwtpmSocket, type OpenTpm } from '../../src/lib/tpm/index.js'
import { freePortPair } from './ports.js'
import { makeTempDir, withTempDir } from './temp.js'

export interface SwtpmHandle {
  host: string
  port: number
  /** "127.0.0.1:PORT" */
  endpoint: string
  open: OpenTpm
  /** With ekCertificate: swtpm_setup's local CA (PEM), a fresh one per TPM; the EK certificates chain to root. */
  ekCa?: { root: string; intermediate: string }
  stop(): Promise<void>
  /**
   * A reboot of the machine the TPM sits in: a new swtpm process over the same state (NV kept, PCRs
   * reset), on new ports; host, port, endpoint and open name the new one afterwards. `powerCut`
   * SIGKILLs the old one (no chance of a TPM2_Shutdown of its own), else it gets SIGTERM.
   */
  restart(opts?: { powerCut?: boolean }): Promise<void>
}

const HOST = '127.0.0.1'
const START_ATTEMPTS = 5
const READY_TIMEOUT_MS = 10_000

export interface SwtpmOptions {
  /** Manufacture the TPM with swtpm_setup: EK and an EK certificate in NV, from a CA in the temp dir. */
  ekCertificate?: boolean
}

/** A fresh swtpm (state in a temp dir, random free ports, not-need-init,startup-clear); stop() kills it and removes the dir. */
export async function startSwtpm(opts: SwtpmOptions = {}): Promise<SwtpmHandle> {
  const { dir: stateDir, cleanup } = await makeTempDir('constell-swtpm-')
  const ekCa = opts.ekCertificate
    ? await manufacture(stateDir).catch(async (err: unknown) => {
        await cleanup()
        throw err
      })
    : undefined
  let running: { child: ChildProcess; port: number }
  try {
    running = await spawnSwtpm(stateDir)
  } catch (err) {
    await cleanup()
    throw err
  }
  const handle: SwtpmHandle = {
    host: HOST,
    port: running.port,
    endpoint: `${HOST}:${running.port}`,
    open: openSwtpm(HOST, running.port),
    ...(ekCa && { ekCa }),
    stop: once(async () => {
      await kill(running.child)
      await cleanup()
    }),
    async restart({ powerCut = false } = {}) {
      await kill(running.child, powerCut ? 'SIGKILL' : 'SIGTERM')
      running = await spawnSwtpm(stateDir)
      handle.port = running.port
      handle.endpoint = `${HOST}:${running.port}`
      handle.open = openSwtpm(HOST, running.port)
    },
  }
  return handle
}

/** swtpm on free ports over `stateDir`; a port taken between freePortPair() and bind is retried with new ones. */
async function spawnSwtpm(stateDir: string): Promise<{ child: ChildProcess; port: number }> {
  let lastError: unknown
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
    // the tss2 swtpm TCTI (tpm2-tools) expects the control port right after the server port
    const port = await freePortPair()
    const ctrlPort = port + 1
    const child = spawn(
      'swtpm',
      [
        'socket',
        '--tpm2',
        '--server',
        `type=tcp,port=${port},bindaddr=${HOST}`,
        '--ctrl',
        `type=tcp,port=${ctrlPort},bindaddr=${HOST}`,
        '--tpmstate',
        `dir=${stateDir}`,
        '--flags',
        'not-need-init,startup-clear',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    )
    let stderr = ''
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    try {
      await waitUntilAccepting(child, { host: HOST, port }, () => stderr)
      return { child, port }
    } catch (err: unknown) {
      lastError = err
      await kill(child)
    }
  }
  throw new Error(`starting swtpm failed ${START_ATTEMPTS} times`, { cause: lastError })
}

export interface SocketSwtpmHandle {
  /** The command channel's socket (0600), as a node config names it after `unix:`. */
  server: string
  ctrl: string
  open: OpenTpm
  stop(): Promise<void>
}

/**
 * A fresh swtpm on unix sockets, as mini's nodes run theirs: the command and control channels 0600
 * in a 0700 folder under `dir` (a temp dir of its own, removed by stop(), when not given).
 */
export async function startSwtpmOnSocket(dir?: string): Promise<SocketSwtpmHandle> {
  const temp = dir === undefined ? await makeTempDir('constell-swtpm-') : undefined
  const folder = path.join(dir ?? temp!.dir, 'node')
  await mkdir(path.join(folder, 'tpm'), { recursive: true, mode: 0o700 })
  const server = path.join(folder, 'swtpm.sock')
  const ctrl = path.join(folder, 'swtpm-ctrl.sock')
  // prettier-ignore
  const child = spawn('swtpm', [
    'socket', '--tpm2',
    '--server', `type=unixio,path=${server},mode=0600`,
    '--ctrl', `type=unixio,path=${ctrl},mode=0600`,
    '--tpmstate', `dir=${path.join(folder, 'tpm')}`,
    '--flags', 'not-need-init,startup-clear',
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const stop = once(async () => {
    await kill(child, 'SIGKILL')
    await temp?.cleanup()
  })
  try {
    await waitUntilAccepting(child, { path: server }, () => stderr)
  } catch (err) {
    await stop()
    throw err
  }
  return { server, ctrl, open: openSwtpmSocket(server), stop }
}

/**
 * swtpm_setup with a private local CA in a temp dir (nothing global on disk is touched), as
 * `mini up --attestation tpm-ek` manufactures its nodes' TPMs (src/lib/mini/tpm-ca.ts).
 */
async function manufacture(stateDir: string): Promise<{ root: string; intermediate: string }> {
  return withTempDir(async (caDir) => {
    const ca = localCaFiles(caDir)
    await writeLocalCaConfig(ca)
    await manufactureTpm(createRunner(), stateDir, ca)
    return {
      root: await readFile(ca.rootCert, 'utf8'),
      intermediate: await readFile(ca.issuerCert, 'utf8'),
    }
  }, 'constell-swtpm-ca-')
}

async function waitUntilAccepting(
  child: ChildProcess,
  target: NetConnectOpts,
  stderr: () => string,
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`swtpm exited: ${stderr()}`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(target, () => {
        s.destroy()
        resolve(true)
      })
      s.once('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 20))
  }
  const where = 'path' in target ? target.path : `port ${target.port}`
  throw new Error(`swtpm did not accept connections on ${where}: ${stderr()}`)
}

function kill(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill(signal)
  })
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined
  return () => (running ??= fn())
}
