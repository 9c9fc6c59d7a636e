import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { createLogger } from '../../src/lib/system/index.js'
import { produceSnpEvidence, produceTdxEvidence } from '../../src/lib/cvm-standin/index.js'
import {
  startConfigfsTsmStandIn,
  type ConfigfsTsmStandIn,
  type ProduceEvidence,
} from '../../src/lib/cvm-standin/configfs-tsm.js'

const echoProduce: ProduceEvidence = async (inblob) => ({
  outblob: Buffer.concat([Buffer.from('r:'), inblob]),
})
const watchers = () => process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length

describe('cvm-standin: configfs-tsm stand-in (test double of the kernel interface)', () => {
  let tmp: TempDir
  let standIn: ConfigfsTsmStandIn | undefined
  const logs: Record<string, unknown>[] = []
  const log = createLogger({
    format: 'json',
    write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>),
  })
  beforeEach(async () => {
    tmp = await makeTempDir('constell-tsm-standin-')
    logs.length = 0
  })
  afterEach(async () => {
    await standIn?.stop()
    standIn = undefined
    await tmp.cleanup()
  })
  const at = (...p: string[]) => path.join(tmp.dir, ...p)
  const generationOf = async (entry: string) =>
    (await readFile(at(entry, 'generation'), 'utf8').catch(() => '')).trim()

  for (const [provider, files] of [
    ['sev_guest', ['auxblob', 'generation', 'inblob', 'outblob', 'privlevel', 'privlevel_floor', 'provider']],
    ['tdx_guest', ['generation', 'inblob', 'outblob', 'privlevel', 'privlevel_floor', 'provider']],
  ] as const)
    it(`populates a new ${provider} entry as the kernel does, generation last`, async () => {
      standIn = await startConfigfsTsmStandIn({
        dir: tmp.dir,
        provider,
        produce: echoProduce,
        privlevelFloor: 2,
      })
      await mkdir(at('e'))
      await eventually(
        'generation',
        async () => ((await generationOf('e')) === '0' ? true : undefined),
        10_000,
      )
      expect((await readdir(at('e'))).sort()).to.deep.equal(files)
      expect(await readFile(at('e', 'provider'), 'utf8')).to.equal(`${provider}\n`)
      expect(await readFile(at('e', 'privlevel_floor'), 'utf8')).to.equal('2\n')
    })

  const refusals: Record<string, { attribute: string; data: Buffer; why: string }> = {
    'an inblob over 64 bytes (EFBIG)': {
      attribute: 'inblob',
      data: randomBytes(65),
      why: '65 bytes, more than 64 (EFBIG)',
    },
    'a privlevel below privlevel_floor (EINVAL)': {
      attribute: 'privlevel',
      data: Buffer.from('0'),
      why: '"0" is not from 1 to 3 (EINVAL)',
    },
    'a privlevel above 3 (EINVAL)': {
      attribute: 'privlevel',
      data: Buffer.from('4'),
      why: '"4" is not from 1 to 3 (EINVAL)',
    },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses ${name}: generation stays, the log says why, the next valid write counts`, async () => {
      standIn = await startConfigfsTsmStandIn({
        dir: tmp.dir,
        provider: 'sev_guest',
        produce: echoProduce,
        log,
        privlevelFloor: 1,
      })
      await mkdir(at('e'))
      await eventually(
        'generation 0',
        async () => ((await generationOf('e')) === '0' ? true : undefined),
        10_000,
      )
      await writeFile(at('e', tc.attribute), tc.data)
      const refusal = await eventually(
        'the refusal',
        async () => logs.find((l) => l.attribute === tc.attribute),
        10_000,
      )
      expect(refusal).to.include({ level: 'warn', why: tc.why })
      expect(await generationOf('e')).to.equal('0')
      const inblob = randomBytes(64)
      await writeFile(at('e', 'inblob'), inblob)
      await eventually(
        'generation 1',
        async () => ((await generationOf('e')) === '1' ? true : undefined),
        10_000,
      )
      expect(await readFile(at('e', 'outblob'))).to.deep.equal(Buffer.concat([Buffer.from('r:'), inblob]))
    })

  it('releases every watcher on stop(), with entries still present', async () => {
    const before = watchers()
    standIn = await startConfigfsTsmStandIn({ dir: tmp.dir, provider: 'tdx_guest', produce: echoProduce })
    await mkdir(at('a'))
    await mkdir(at('b'))
    await eventually(
      'both entries',
      async () => ((await generationOf('b')) && (await generationOf('a')) ? true : undefined),
      10_000,
    )
    expect(watchers()).to.equal(before + 3)
    await standIn.stop()
    await standIn.stop() // idempotent
    // libuv frees a closed handle in a later turn of its loop
    await eventually('the watchers released', async () => (watchers() === before ? true : undefined), 10_000)
  })

  it('refuses to serve a directory that does not exist', async () => {
    await expect(
      startConfigfsTsmStandIn({ dir: at('missing'), provider: 'sev_guest', produce: echoProduce }),
    ).to.be.rejectedWith(`configfs-tsm stand-in: ${at('missing')} cannot be served`)
  })
})

describe('cvm-standin: produce from the SNP and TDX stand-in signers', () => {
  it('SEV-SNP: inblob zero-padded to the 64-byte REPORT_DATA, auxblob the certificate table', async () => {
    const produce = produceSnpEvidence({
      report: ({ reportData }) => Buffer.concat([Buffer.from('snp:'), reportData]),
      certificateTable: async () => Buffer.from('table'),
    })
    const got = await produce(Buffer.from('abc'), {})
    expect(got.outblob).to.deep.equal(Buffer.concat([Buffer.from('snp:abc'), Buffer.alloc(61)]))
    expect(got.auxblob).to.deep.equal(Buffer.from('table'))
  })

  it('TDX: exactly 64 bytes of REPORTDATA, anything else refused as tdx-guest does', async () => {
    const produce = produceTdxEvidence({
      quote: async ({ reportData }) => Buffer.concat([Buffer.from('q:'), reportData]),
    })
    const inblob = randomBytes(64)
    expect(await produce(inblob, {})).to.deep.equal({ outblob: Buffer.concat([Buffer.from('q:'), inblob]) })
    await expect(produce(randomBytes(63), {})).to.be.rejectedWith(
      'tdx_guest takes a 64-byte inblob, got 63 bytes (EINVAL)',
    )
  })
})
