import { createHash, randomBytes } from 'node:crypto'
import { readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { extendPcr, readPcrs } from '../../src/lib/tpm/index.js'
import {
  applyMeasurementsUpdate,
  planMeasurementsUpdate,
  readConfigMeasurements,
  writeConfigMeasurements,
} from '../../src/lib/config/measurements-update.js'
import { startVerifyServiceOn, type VerifyServiceProcess } from './verify-service-process.js'

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest()
const ZERO = '00'.repeat(32)

/** A hand-edited config: comments, a flow map, an unquoted key, single quotes, a warn-only PCR. */
const CONFIG = `# my cluster
version: v4
name: constell
kubernetesVersion: v1.31.13   # pinned
serviceCIDR: 10.96.0.0/12
attestation:
  qemuVTPM:
    measurements:
      "4": { expected: "${ZERO}", warnOnly: false }   # kernel
      9:
        expected: '${ZERO}'
        warnOnly: true     # still testing
      "12":
        expected: "${ZERO}"
        warnOnly: false
      "15": { expected: "${ZERO}", warnOnly: false } # cluster ID
`

describe('constellation config measurements against constellation verifyservice on swtpm', function () {
  this.timeout(120_000)
  let tpm: SwtpmHandle
  let ws: { dir: string; cleanup: () => Promise<void> }
  let service: VerifyServiceProcess
  let configFile: string

  beforeEach(async () => {
    tpm = await startSwtpm()
    ws = await makeTempDir()
    configFile = path.join(ws.dir, 'constellation-conf.yaml')
    await writeFile(configFile, CONFIG, { mode: 0o640 })
    service = await startVerifyServiceOn(tpm, ws.dir, async () => `127.0.0.1:${await freePort()}`)
  })
  afterEach(async () => {
    // after a failed start there is no service (or the last test's, stopped): the swtpm must go anyway
    const code = await service?.stop()
    await tpm.stop()
    await ws.cleanup()
    expect(code, 'verifyservice stops cleanly on SIGTERM').to.equal(0)
  })

  it('--yes writes the golden node values in place: comments, layout and warnOnly kept, PCR 15 zero', async () => {
    await extendPcr(tpm.open, 4, sha256('kernel'))
    await extendPcr(tpm.open, 9, sha256('initrd'))
    const clusterId = randomBytes(32)
    await extendPcr(tpm.open, 15, sha256(clusterId)) // a node that was initialized once
    const pcrs = await readPcrs(tpm.open, [4, 9, 12])
    const hex = (i: number) => pcrs.get(i)!.toString('hex')

    const res = await runCli([
      'config',
      'measurements',
      '-C',
      ws.dir,
      '-e',
      service.endpoint,
      '--yes',
      '--json',
    ])
    expect(res.code, res.stderr).to.equal(0)
    const report = JSON.parse(res.stdout) as {
      written: boolean
      pcrs: Array<{ index: number; node: string; next: string; warnOnly: boolean }>
      notes: string[]
    }
    expect(report.written).to.be.true
    expect(report.pcrs.map((p) => [p.index, p.next, p.warnOnly])).to.deep.equal([
      [4, hex(4), false],
      [9, hex(9), true],
      [12, hex(12), false],
      [15, ZERO, false],
    ])
    expect(report.pcrs.find((p) => p.index === 15)?.node).to.not.equal(ZERO)
    expect(report.notes.join(' ')).to.match(/PCR 15 stays zero: .*never initialized/)
    expect(report.notes.join(' ')).to.include('it was initialized once')

    const want = CONFIG.replace(`"4": { expected: "${ZERO}"`, `"4": { expected: "${hex(4)}"`)
      .replace(`expected: '${ZERO}'`, `expected: '${hex(9)}'`)
      .replace(`"12":\n        expected: "${ZERO}"`, `"12":\n        expected: "${hex(12)}"`)
    expect(await readFile(configFile, 'utf8')).to.equal(want)
    expect((await stat(configFile)).mode & 0o777).to.equal(0o640)

    const verified = await runCli([
      'verify',
      '-C',
      ws.dir,
      '-e',
      service.endpoint,
      '--cluster-id',
      clusterId.toString('hex'),
    ])
    expect(verified.code, verified.stderr).to.equal(0)
    const again = await runCli(['config', 'measurements', '-C', ws.dir, '-e', service.endpoint])
    expect(again.code, again.stderr).to.equal(0)
    expect(again.stdout).to.include('already expects these values; nothing to write')
  })

  it('without --yes on a non-terminal (or with --json) it is a usage error and the file is untouched', async () => {
    await extendPcr(tpm.open, 4, sha256('kernel'))
    for (const extra of [[], ['--json']]) {
      const res = await runCli(['config', 'measurements', '-C', ws.dir, '-e', service.endpoint, ...extra])
      expect(res.code).to.equal(2)
      expect(res.stdout + res.stderr).to.include('refusing to change the config without confirmation')
      expect(res.stdout + res.stderr).to.include('nothing was changed')
      expect(await readFile(configFile, 'utf8')).to.equal(CONFIG)
    }
  })
})

describe('measurements-update: editing constellation-conf.yaml', () => {
  let ws: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => (ws = await makeTempDir()))
  afterEach(() => ws.cleanup())
  const node = new Map([
    [4, Buffer.alloc(32, 0x11)],
    [9, Buffer.alloc(32, 0x22)],
    [12, Buffer.alloc(32)],
    [15, Buffer.alloc(32, 0x33)],
  ])

  it('quotes a plain digit-only value (it would read back as a number)', () => {
    const text = CONFIG.replace(
      `"12":\n        expected: "${ZERO}"`,
      `"12":\n        expected: ${'1'.repeat(64)}`,
    )
    const plan = planMeasurementsUpdate(
      { '12': { expected: '1'.repeat(64), warnOnly: false }, '15': { expected: ZERO, warnOnly: false } },
      node,
    )
    expect(applyMeasurementsUpdate(text, 'conf.yaml', plan)).to.include(`"12":\n        expected: "${ZERO}"`)
  })

  it('refuses to write when the file changed after it was read, and writes through a symlink to its target', async () => {
    const real = path.join(ws.dir, 'real.yaml')
    const link = path.join(ws.dir, 'constellation-conf.yaml')
    await writeFile(real, CONFIG)
    await symlink(real, link)
    const read = await readConfigMeasurements(link)
    const text = applyMeasurementsUpdate(read.text, link, planMeasurementsUpdate(read.measurements, node))
    await writeFile(real, CONFIG + '# someone else\n')
    await expect(writeConfigMeasurements(read, text)).to.be.rejectedWith(
      /changed while the node was being attested/,
    )
    expect(await readFile(real, 'utf8')).to.equal(CONFIG + '# someone else\n')

    const fresh = await readConfigMeasurements(link)
    await writeConfigMeasurements(fresh, text.replace(/$/, ''))
    expect(await readlink(link)).to.equal(real)
    expect(await readFile(real, 'utf8')).to.include('11'.repeat(32))
  })
})
