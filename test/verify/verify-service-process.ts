/** `constellation verifyservice` as a real child process, for the CLI tests that dial it. */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import type { AttestationVariant } from '../../src/lib/attestation/index.js'
import { CLI_ARGS } from '../support/cli.js'
import type { SwtpmHandle } from '../support/swtpm.js'

export interface VerifyServiceProcess {
  endpoint: string
  logs: () => string
  stop(): Promise<number | null>
}

/** `constellation verifyservice` as a child process on a free port (it logs the bound address). */
async function startVerifyService(configFile: string): Promise<VerifyServiceProcess> {
  const child: ChildProcessByStdio<null, null, Readable> = spawn(
    process.execPath,
    [...CLI_ARGS, 'verifyservice', '--config', configFile],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  let stderr = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const endpoint = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
      for (const line of stderr.split('\n')) {
        if (!line.includes('Verification service listening')) continue
        const entry = JSON.parse(line) as { address?: string }
        if (entry.address) resolve(entry.address)
      }
    })
    void exited.then((code) => reject(new Error(`verifyservice exited with ${code}: ${stderr}`)))
    setTimeout(() => reject(new Error(`verifyservice did not report its address: ${stderr}`)), 60_000).unref()
  }).catch((err: unknown) => {
    child.kill('SIGKILL') // never leave a stray daemon behind a failed start
    throw err
  })
  return {
    endpoint,
    logs: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      return exited
    },
  }
}

/** A verifyservice on the address `listen()` picks, retried when a parallel run took it. */
export async function startVerifyServiceOn(
  tpm: SwtpmHandle,
  dir: string,
  listen: () => Promise<string>,
  variant: AttestationVariant = 'qemu-vtpm',
): Promise<VerifyServiceProcess> {
  const nodeConfig = path.join(dir, `node-config-${randomBytes(4).toString('hex')}.yaml`)
  for (let attempt = 1; ; attempt++) {
    await writeFile(
      nodeConfig,
      `attestationVariant: ${variant}\ntpm:\n  swtpm: "${tpm.endpoint}"\nverifyService:\n  listen: "${await listen()}"\n`,
    )
    try {
      return await startVerifyService(nodeConfig)
    } catch (err: unknown) {
      if (attempt >= 3 || !String(err).includes('EADDRINUSE')) throw err
    }
  }
}
