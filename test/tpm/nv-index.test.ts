import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { readNvIndex, withTpm } from '../../src/lib/tpm/index.js'
import { NvIndexMissingError } from '../../src/lib/tpm/nv-index.js'
import { tpm2Tools } from './tpm2-tools.js'
import { writeNvIndex } from '../../src/lib/tpm/nv-index.js'

/** Where Azure's paravisor keeps the HCL report; the stand-in TPM gets one at the same place. */
const HCL_REPORT_INDEX = 0x01400001

describe('tpm: NV indices written and read whole (checked with tpm2-tools)', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let tmp: TempDir
  let tools: ReturnType<typeof tpm2Tools>
  beforeEach(async () => {
    ;[tpm, tmp] = await Promise.all([startSwtpm(), makeTempDir('constell-nv-index-')])
    tools = tpm2Tools(tpm, tmp.dir)
  })
  afterEach(async () => {
    await Promise.all([tpm?.stop(), tmp?.cleanup()])
  })

  const write = (data: Buffer, index = HCL_REPORT_INDEX) =>
    withTpm(tpm.open, (t) => writeNvIndex(t, index, data))
  const read = (index = HCL_REPORT_INDEX) => withTpm(tpm.open, (t) => readNvIndex(t, index))
  /** What tpm2_nvread (owner auth) and tpm2_nvreadpublic say about the index. */
  async function toolsSee(
    index = HCL_REPORT_INDEX,
  ): Promise<{ data: Buffer; size: number; attributes: string }> {
    const hex = `0x${index.toString(16)}`
    await tools('tpm2_nvread', [hex, '-C', 'o', '-o', 'out.bin'])
    const { stdout } = await tools('tpm2_nvreadpublic', [hex])
    return {
      data: await readFile(path.join(tmp.dir, 'out.bin')),
      size: Number(/^\s+size: (\d+)$/m.exec(stdout)?.[1]),
      attributes: /attributes:\s+friendly: (\S+)/.exec(stdout)?.[1] ?? '',
    }
  }

  it('defines and writes an index larger than one NV_Write, as tpm2-tools reads it back', async () => {
    const report = randomBytes(2000)
    await write(report)
    expect(await read()).to.deep.equal(report)
    const seen = await toolsSee()
    expect(seen.data).to.deep.equal(report)
    expect(seen.size).to.equal(2000)
    expect(seen.attributes.split('|').sort()).to.deep.equal(
      ['authread', 'authwrite', 'no_da', 'ownerread', 'ownerwrite', 'written'].sort(),
    )
  })

  it('rewrites in place at the same size, and redefines the index for another size', async () => {
    await write(randomBytes(1500))
    const same = randomBytes(1500)
    await write(same)
    expect((await toolsSee()).data).to.deep.equal(same)
    const smaller = randomBytes(700)
    await write(smaller)
    const seen = await toolsSee()
    expect([seen.size, seen.data]).to.deep.equal([700, smaller])
    expect(await read()).to.deep.equal(smaller)
  })

  it('says which index is missing, or defined but never written', async () => {
    await expect(read()).to.be.rejectedWith(NvIndexMissingError, 'the TPM has no NV index 0x01400001')
    await tools('tpm2_nvdefine', [
      '0x01400002',
      '-C',
      'o',
      '-s',
      '64',
      '-a',
      'ownerread|ownerwrite|authread|authwrite',
    ])
    await expect(read(0x01400002)).to.be.rejectedWith(
      NvIndexMissingError,
      'the TPM has a never-written NV index 0x01400002',
    )
  })

  it("refuses more than the TPM's TPM_PT_NV_INDEX_MAX before defining anything", async () => {
    // an HCL report with both RSA keys in its runtime data is ~2.6 KB; swtpm (libtpms 0.9) holds 2048
    await expect(write(randomBytes(2600))).to.be.rejectedWith(
      '2600 bytes do not fit NV index 0x01400001: this TPM holds at most 2048 bytes in one index (TPM_PT_NV_INDEX_MAX)',
    )
    await expect(read()).to.be.rejectedWith(NvIndexMissingError)
  })
})
