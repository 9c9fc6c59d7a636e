import { randomBytes } from 'node:crypto'
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { requestTsmReport } from '../../src/lib/tsm/index.js'
import { TsmReportError } from '../../src/lib/tsm/attributes.js'
import {
  startConfigfsTsmStandIn,
  type ConfigfsTsmStandIn,
  type ProduceEvidence,
} from '../../src/lib/cvm-standin/configfs-tsm.js'

/** A fake signer: the "report" names the inblob and privlevel it was made for. */
const fakeProduce: ProduceEvidence = async (inblob, { privlevel }) => ({
  outblob: Buffer.from(`report(${inblob.toString('hex')},vmpl=${privlevel ?? '-'})`),
  auxblob: Buffer.from('certificate table'),
})
const reportFor = (inblob: Buffer, vmpl = '-') =>
  Buffer.from(`report(${inblob.toString('hex')},vmpl=${vmpl})`)

describe('tsm: requestTsmReport against the configfs-tsm stand-in', () => {
  let tmp: TempDir
  let root: string
  let standIn: ConfigfsTsmStandIn | undefined
  const serve = async (
    produce: ProduceEvidence = fakeProduce,
    provider: 'sev_guest' | 'tdx_guest' = 'sev_guest',
  ) => {
    standIn = await startConfigfsTsmStandIn({ dir: root, provider, produce, privlevelFloor: 1 })
  }
  beforeEach(async () => {
    tmp = await makeTempDir('constell-tsm-')
    root = path.join(tmp.dir, 'report')
    await mkdir(root)
  })
  afterEach(async () => {
    await standIn?.stop()
    standIn = undefined
    await tmp.cleanup()
  })

  it('returns the evidence for the inblob, with auxblob and provider, and removes its entry', async () => {
    await serve()
    const inblob = randomBytes(64)
    const got = await requestTsmReport({ root, inblob, provider: 'sev_guest' })
    expect(got).to.deep.equal({
      outblob: reportFor(inblob),
      auxblob: Buffer.from('certificate table'),
      provider: 'sev_guest',
      generation: 1,
    })
    expect(await readdir(root)).to.deep.equal([])
  })

  it('writes privlevel too (generation advances twice), and refuses one below privlevel_floor', async () => {
    await serve()
    const inblob = randomBytes(32)
    const got = await requestTsmReport({ root, inblob, privlevel: 2 })
    expect(got.outblob).to.deep.equal(reportFor(inblob, '2'))
    expect(got.generation).to.equal(2)
    await expect(requestTsmReport({ root, inblob, privlevel: 0 })).to.be.rejectedWith(
      TsmReportError,
      /privlevel 0 is below .*privlevel_floor \(1\)/,
    )
    expect(await readdir(root)).to.deep.equal([])
  })

  it('serves concurrent requests each in its own entry', async () => {
    await serve()
    const inblobs = Array.from({ length: 8 }, () => randomBytes(64))
    const got = await Promise.all(inblobs.map((inblob) => requestTsmReport({ root, inblob })))
    expect(got.map((r) => r.outblob)).to.deep.equal(inblobs.map((b) => reportFor(b)))
    expect(await readdir(root)).to.deep.equal([])
  })

  /** A produce that, as another process would, writes its own inblob into the entry being served. */
  const racingProduce = (races: { left: number }): ProduceEvidence => {
    const ours = new Set<string>()
    return async (inblob, ctx) => {
      if (!ours.has(inblob.toString('hex')) && races.left > 0) {
        races.left--
        const [entry] = await readdir(root)
        const theirs = randomBytes(64)
        ours.add(theirs.toString('hex'))
        await writeFile(path.join(root, entry!, 'inblob'), theirs)
      }
      return fakeProduce(inblob, ctx)
    }
  }

  it('detects a racing writer, retries once in a fresh entry, and fails when it races again', async () => {
    await serve(racingProduce({ left: 2 }))
    const err = await requestTsmReport({ root, inblob: randomBytes(64) }).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(TsmReportError)
    expect((err as Error).message).to.match(/generation is 2 after our writes, want 1: another writer.*twice/)
    expect(await readdir(root)).to.deep.equal([])
  })

  it('succeeds on the retry when the racing writer raced once', async () => {
    await serve(racingProduce({ left: 1 }))
    const inblob = randomBytes(64)
    const got = await requestTsmReport({ root, inblob })
    expect(got.outblob).to.deep.equal(reportFor(inblob))
    expect(await readdir(root)).to.deep.equal([])
  })

  it('refuses a missing report directory, saying this is no confidential VM', async () => {
    const missing = path.join(tmp.dir, 'no-such', 'tsm', 'report')
    await expect(requestTsmReport({ root: missing, inblob: randomBytes(64) })).to.be.rejectedWith(
      TsmReportError,
      `${missing} does not exist: this machine is not a confidential VM, or the kernel lacks configfs-tsm (CONFIG_TSM_REPORTS)`,
    )
  })

  it('refuses another provider than the one asked for, before writing inblob', async () => {
    let produced = 0
    await serve(async (inblob, ctx) => (produced++, fakeProduce(inblob, ctx)), 'tdx_guest')
    await expect(
      requestTsmReport({ root, inblob: randomBytes(64), provider: 'sev_guest' }),
    ).to.be.rejectedWith(TsmReportError, /provider says tdx_guest, this request needs sev_guest/)
    expect(produced).to.equal(0)
    expect(await readdir(root)).to.deep.equal([])
  })

  const refusedInputs: Record<string, { inblob: Buffer; provider?: 'tdx_guest'; want: RegExp }> = {
    'an inblob over 64 bytes': {
      inblob: randomBytes(65),
      want: /inblob is 65 bytes: configfs-tsm takes 1 to 64/,
    },
    'an empty inblob': { inblob: Buffer.alloc(0), want: /inblob is 0 bytes/ },
    'a TDX inblob of other than 64 bytes': {
      inblob: randomBytes(32),
      provider: 'tdx_guest',
      want: /inblob is 32 bytes: tdx_guest takes exactly 64/,
    },
  }
  for (const [name, tc] of Object.entries(refusedInputs))
    it(`refuses ${name} without creating an entry`, async () => {
      await expect(requestTsmReport({ root, inblob: tc.inblob, provider: tc.provider })).to.be.rejectedWith(
        TsmReportError,
        tc.want,
      )
      expect(await readdir(root)).to.deep.equal([])
    })

  it('fails naming outblob when the provider produced nothing, and still removes the entry', async () => {
    await serve(() => Promise.reject(new Error('secure processor said no')))
    await expect(requestTsmReport({ root, inblob: randomBytes(64) })).to.be.rejectedWith(
      TsmReportError,
      /outblob is missing: sev_guest produced no report/,
    )
    expect(await readdir(root)).to.deep.equal([])
  })

  it('gives up after timeoutMs when nothing serves the directory, and removes the entry', async () => {
    await expect(requestTsmReport({ root, inblob: randomBytes(64), timeoutMs: 50 })).to.be.rejectedWith(
      TsmReportError,
      /generation did not appear within 50 ms/,
    )
    expect(await readdir(root)).to.deep.equal([])
  })
})
