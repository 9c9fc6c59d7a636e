/**
 * S3Server — a local S3-compatible server PROCESS for tests (s3rver, as the object-store test
 * double of DESIGN.md §4). It listens on a random loopback port, keeps its data in a temp dir and
 * is stopped (and the dir removed) by stop().
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** s3rver's fixed development credentials; it checks signatures made with them. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const

const START_TIMEOUT_MS = 20_000

export class S3Server {
  endpoint = ''
  private child?: ChildProcess
  private dir = ''

  /**
   * Starts the server with the given buckets created. `private`: requests without credentials are
   * refused 403, as S3 does for a bucket that is not public (plain s3rver serves them).
   */
  async start(buckets: readonly string[], opts: { private?: boolean } = {}): Promise<this> {
    this.dir = await mkdtemp(path.join(os.tmpdir(), 'constell-s3-'))
    const bin = opts.private
      ? fileURLToPath(new URL('./s3rver-private.cjs', import.meta.url))
      : path.join(
          path.dirname(createRequire(import.meta.url).resolve('s3rver/package.json')),
          'bin/s3rver.js',
        )
    const args = [bin, '-d', this.dir, '-a', '127.0.0.1', '-p', '0', '--no-vhost-buckets']
    for (const b of buckets) args.push('--configure-bucket', b)
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    const port = await new Promise<number>((resolve, reject) => {
      let out = ''
      // never leave a half-started server behind
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`s3rver did not start within ${START_TIMEOUT_MS} ms: ${out}`))
      }, START_TIMEOUT_MS)
      const onData = (d: Buffer) => {
        out += d.toString()
        const m = /listening on [^:]+:(\d+)/.exec(out)
        if (m) {
          clearTimeout(timer)
          resolve(Number(m[1]))
        }
      }
      child.stdout?.on('data', onData)
      child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`s3rver exited with code ${code}: ${out}`))
      })
    }).catch(async (err: unknown) => {
      await rm(this.dir, { recursive: true, force: true })
      throw err
    })
    this.endpoint = `http://127.0.0.1:${port}`
    return this
  }

  async stop(): Promise<void> {
    const child = this.child
    this.child = undefined
    if (child && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
      })
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true })
  }
}
