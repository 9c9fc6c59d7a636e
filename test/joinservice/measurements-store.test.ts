import { rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { compareMeasurements } from '../../src/lib/attestation/index.js'
import { MeasurementsStore } from '../../src/lib/joinservice/measurements-store.js'
import { createLogger, writeFileAtomic } from '../../src/lib/system/index.js'

const pcrValue = (byte: number) => Buffer.alloc(32, byte)
const joinConfig = (pcr4: number) =>
  JSON.stringify({ measurements: { '4': { expected: pcrValue(pcr4).toString('hex'), warnOnly: false } } })
/** What a joining node reports: PCR 4 as booted, PCR 15 never extended. */
const node = (pcr4: number) =>
  new Map([
    [4, pcrValue(pcr4)],
    [15, Buffer.alloc(32)],
  ])

async function eventually(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('measurements store', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let file: string
  let lines: Array<{ msg: string; error?: string; file?: string }>
  const stores: MeasurementsStore[] = []
  const logger = () =>
    createLogger({
      format: 'json',
      level: 'debug',
      write: (l) => lines.push(JSON.parse(l) as (typeof lines)[0]),
    })
  const accepts = (store: MeasurementsStore, pcr4: number) =>
    compareMeasurements(store.current(), node(pcr4)).errors.length === 0

  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    file = path.join(dir, 'join-config.json')
    lines = []
  })
  afterEach(async () => {
    stores.splice(0).forEach((s) => s.close())
    await cleanup()
  })
  const open = async (opts: { watch?: boolean; pollIntervalMs?: number } = {}) => {
    const store = await MeasurementsStore.open({ file, logger: logger(), pollIntervalMs: 60_000, ...opts })
    stores.push(store)
    return store
  }

  const changes: Record<
    string,
    { watch: boolean; pollIntervalMs: number; write: (f: string, t: string) => Promise<void> }
  > = {
    'an atomic replace, noticed by the directory watch': {
      watch: true,
      pollIntervalMs: 60_000,
      write: writeFileAtomic,
    },
    'an in-place write, noticed by the directory watch': {
      watch: true,
      pollIntervalMs: 60_000,
      write: writeFile,
    },
    'an atomic replace, noticed by polling alone': {
      watch: false,
      pollIntervalMs: 50,
      write: writeFileAtomic,
    },
  }
  for (const [name, tc] of Object.entries(changes))
    it(`picks up an update without a restart: ${name} (refused → accepted)`, async () => {
      await writeFileAtomic(file, joinConfig(1))
      const store = await open({ watch: tc.watch, pollIntervalMs: tc.pollIntervalMs })
      expect(accepts(store, 2), 'node with PCR 4 = 2 before the update').to.be.false
      await tc.write(file, joinConfig(2))
      await eventually(() => accepts(store, 2), 'the update')
      expect(accepts(store, 1)).to.be.false
      expect(lines.some((l) => l.msg === 'Measurements updated')).to.be.true
    })

  it('keeps the last good set when the update is malformed, logs why once, then takes a good one', async () => {
    await writeFileAtomic(file, joinConfig(1))
    const store = await open()
    await writeFileAtomic(file, '{"measurements": {"4": {"expected": "not hex"}}}')
    await store.reload()
    await store.reload() // the same bad file again: no second log line
    const kept = lines.filter((l) => l.msg === 'Keeping the last good measurements')
    expect(kept).to.have.length(1)
    expect(kept[0]?.error).to.equal('malformed: measurements.4.expected: want 32 bytes as 64 hex digits')
    expect(kept[0]?.file).to.equal(file)
    expect(accepts(store, 1), 'last good set still enforced').to.be.true
    await writeFileAtomic(file, joinConfig(3))
    await eventually(() => accepts(store, 3), 'the good update')
  })

  it('keeps the last good set while the file is gone', async () => {
    await writeFileAtomic(file, joinConfig(1))
    const store = await open()
    await rm(file)
    await store.reload()
    expect(accepts(store, 1)).to.be.true
    expect(lines.find((l) => l.msg === 'Keeping the last good measurements')?.error).to.match(
      /^unreadable: join-config .* does not exist/,
    )
  })

  it('refuses to start without a good join-config, naming the problem', async () => {
    await expect(open()).to.be.rejectedWith(/join-config .*join-config\.json does not exist/)
    await writeFileAtomic(file, '{"measurements": {}}')
    await expect(open()).to.be.rejectedWith(/join-config .*: measurements: empty; refusing to trust any node/)
  })

  it('coalesces a burst of changes into reads that end on the newest file', async () => {
    await writeFileAtomic(file, joinConfig(1))
    const store = await open({ watch: false })
    const reads = [store.reload(), store.reload(), store.reload()]
    await writeFileAtomic(file, joinConfig(5))
    reads.push(store.reload())
    await Promise.all(reads)
    expect(accepts(store, 5)).to.be.true
  })
})
