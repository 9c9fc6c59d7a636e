import { createHash } from 'node:crypto'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { startVerifyServiceOn, type VerifyServiceProcess } from './verify-service-process.js'
import { extendPcr } from '../../src/lib/tpm/index.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()

describe('constellation verify --protocol get-attestation against constellation verifyservice on swtpm', function () {
  this.timeout(120_000)
  let tpm: SwtpmHandle
  let ws: { dir: string; cleanup: () => Promise<void> }
  let service: VerifyServiceProcess

  beforeEach(async () => {
    tpm = await startSwtpm()
    ws = await makeTempDir()
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    service = await startVerifyServiceOn(tpm, ws.dir, async () => `127.0.0.1:${await freePort()}`)
  })
  afterEach(async () => {
    const code = await service?.stop()
    await tpm.stop()
    await ws.cleanup()
    expect(code, 'verifyservice stops cleanly on SIGTERM').to.equal(0)
  })

  const verify = (...extra: string[]) =>
    runCli([
      'verify',
      '-C',
      ws.dir,
      '--node-endpoint',
      service.endpoint,
      '--protocol',
      'get-attestation',
      ...extra,
    ])

  it('exits 0 when the measurements equal the PCRs, then 4 naming the index after an enforced PCR changed', async () => {
    const ok = await verify()
    expect(ok.code, ok.stderr).to.equal(0)
    expect(ok.stdout).to.match(/^9\s+0{64}\s+enforced\s+ok$/m)
    expect(ok.stdout).to.include('is trusted')
    expect(service.logs()).to.include('Attestation issued') // it came through the RPC, not aTLS

    await extendPcr(tpm.open, 9, sha256(Buffer.from('another kernel')))
    const bad = await verify()
    expect(bad.code, bad.stderr).to.equal(4)
    expect(bad.stderr).to.match(/untrusted measurement value [0-9a-f]{64} at index 9/)
    expect(bad.stdout).to.match(/^9\s+[0-9a-f]{64}\s+enforced\s+mismatch$/m)
    const json = await verify('--json')
    expect(json.code).to.equal(4)
    const report = JSON.parse(json.stdout) as {
      trusted: boolean
      pcrs: Array<{ index: number; status: string }>
      error?: { message: string; exitCode: number }
    }
    expect(report.trusted).to.be.false
    expect(report.pcrs.find((p) => p.index === 9)?.status).to.equal('mismatch')
    expect(report.error?.message).to.match(/at index 9$/)
  })

  it('exits 3 when nothing listens, and 2 for an unknown protocol', async () => {
    const closed = await runCli([
      'verify',
      '-C',
      ws.dir,
      '-e',
      '127.0.0.1:1',
      '--protocol',
      'get-attestation',
    ])
    expect(closed.code).to.equal(3)
    expect(closed.stderr).to.include('node 127.0.0.1:1 is not reachable')
    const bad = await verify('--protocol', 'http')
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.include('--protocol')
  })
})
