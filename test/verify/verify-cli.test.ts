import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { expect } from '../support/chai.js'
import { CLI_ARGS, makeTempDir, runCli } from '../support/cli.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { extendPcr } from '../../src/lib/tpm/index.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()

interface VerifyServiceProcess {
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

describe('constellation verify against constellation verifyservice on swtpm', function () {
  this.timeout(120_000)
  let tpm: SwtpmHandle
  let ws: { dir: string; cleanup: () => Promise<void> }
  let service: VerifyServiceProcess

  beforeEach(async () => {
    tpm = await startSwtpm()
    ws = await makeTempDir()
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    const nodeConfig = path.join(ws.dir, 'node-config.yaml')
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      await writeFile(
        nodeConfig,
        `attestationVariant: qemu-vtpm\ntpm:\n  swtpm: "${tpm.endpoint}"\nverifyService:\n  listen: "127.0.0.1:${port}"\n`,
      )
      try {
        service = await startVerifyService(nodeConfig)
        break
      } catch (err: unknown) {
        if (attempt >= 3 || !String(err).includes('EADDRINUSE')) throw err
      }
    }
  })
  afterEach(async () => {
    const code = await service?.stop()
    await tpm.stop()
    await ws.cleanup()
    expect(code, 'verifyservice stops cleanly on SIGTERM').to.equal(0)
    expect(service.logs()).to.include('Verification service stopped')
  })

  const verify = (...extra: string[]) =>
    runCli(['verify', '-C', ws.dir, '--node-endpoint', service.endpoint, ...extra])

  it('exits 0 when the measurements equal the PCRs, then 4 naming the index after an enforced PCR changed', async () => {
    const ok = await verify()
    expect(ok.code, ok.stderr).to.equal(0)
    expect(ok.stdout).to.match(/^PCR\s+VALUE\s+EXPECTATION\s+STATUS/m)
    expect(ok.stdout).to.match(/^9\s+0{64}\s+enforced\s+ok$/m)
    expect(ok.stdout).to.include('is trusted')

    await extendPcr(tpm.open, 9, sha256(Buffer.from('another kernel')))
    const bad = await verify()
    expect(bad.code).to.equal(4)
    expect(bad.stderr).to.match(/untrusted measurement value [0-9a-f]{64} at index 9/)
    expect(bad.stdout).to.match(/^9\s+[0-9a-f]{64}\s+enforced\s+mismatch$/m)
    expect(bad.stdout).to.include('NOT trusted')
  })

  it('with --cluster-id exits 0 once PCR 15 was extended with SHA256(clusterID), and --json reports it', async () => {
    const clusterId = randomBytes(32)
    await extendPcr(tpm.open, 15, sha256(clusterId))
    const withoutId = await verify()
    expect(withoutId.code).to.equal(4)
    expect(withoutId.stderr).to.match(/at index 15/)
    const other = await verify('--cluster-id', randomBytes(32).toString('hex'))
    expect(other.code).to.equal(4)
    const res = await verify('--cluster-id', clusterId.toString('hex'), '--json')
    expect(res.code, res.stderr).to.equal(0)
    const report = JSON.parse(res.stdout) as {
      trusted: boolean
      pcrs: Array<{ index: number; status: string }>
    }
    expect(report.trusted).to.be.true
    expect(report.pcrs.find((p) => p.index === 15)?.status).to.equal('ok')
    expect(report.pcrs).to.have.length(24)
  })

  it('exits 3 when nothing listens at the endpoint, 2 for a bad --cluster-id', async () => {
    const closed = await runCli(['verify', '-C', ws.dir, '--node-endpoint', '127.0.0.1:1'])
    expect(closed.code).to.equal(3)
    expect(closed.stderr).to.include('not reachable')
    const badId = await verify('--cluster-id', 'xyz')
    expect(badId.code).to.equal(2)
    expect(badId.stderr).to.include('--cluster-id')
  })
})
