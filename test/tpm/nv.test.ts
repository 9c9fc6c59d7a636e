import { randomBytes, X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { readEkCertificate, readEkCertificateChain, TpmParseError, withTpm } from '../../src/lib/tpm/index.js'
import { getTpmProperty, nvReadAll } from '../../src/lib/tpm/nv.js'
import { TPM_PT_NV_BUFFER_MAX } from '../../src/lib/tpm/constants.js'
import { testCertificate } from '../support/test-ca.js'
import { tpm2Tools } from './tpm2-tools.js'

describe('NV indices read whole, in chunks the TPM accepts', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let tmp: TempDir
  let tools: ReturnType<typeof tpm2Tools>
  beforeEach(async () => {
    ;[tpm, tmp] = await Promise.all([startSwtpm({ ekCertificate: true }), makeTempDir('constell-nv-')])
    tools = tpm2Tools(tpm, tmp.dir)
  })
  afterEach(async () => {
    await Promise.all([tpm?.stop(), tmp?.cleanup()])
  })

  /** tpm2_nvdefine + tpm2_nvwrite (owner auth) of `data` at `index`. */
  async function defineIndex(index: number, data: Buffer, attributes: string): Promise<void> {
    const hex = `0x${index.toString(16)}`
    await writeFile(path.join(tmp.dir, 'data.bin'), data)
    await tools('tpm2_nvdefine', [hex, '-C', 'o', '-s', String(data.length), '-a', attributes])
    await tools('tpm2_nvwrite', [hex, '-C', 'o', '-i', 'data.bin'])
  }

  it("reads an index larger than TPM_PT_NV_BUFFER_MAX, with its own auth or, lacking AUTHREAD, the owner's", async () => {
    const maxChunk = await withTpm(tpm.open, (t) => getTpmProperty(t, TPM_PT_NV_BUFFER_MAX))
    expect(maxChunk).to.equal(1024)
    const big = randomBytes(2048)
    await defineIndex(0x01500001, big, 'ownerread|ownerwrite|authread|authwrite')
    const ownerOnly = randomBytes(1500)
    await defineIndex(0x01500002, ownerOnly, 'ownerread|ownerwrite')
    const [a, b] = await withTpm(tpm.open, async (t) => [
      await nvReadAll(t, 0x01500001),
      await nvReadAll(t, 0x01500002),
    ])
    expect(a).to.deep.equal(big)
    expect(b).to.deep.equal(ownerOnly)
    // which auth was used: with an owner password set, the owner's empty auth fails, the index's does not
    await tools('tpm2_changeauth', ['-c', 'o', 'owner-secret'])
    expect(await withTpm(tpm.open, (t) => nvReadAll(t, 0x01500001))).to.deep.equal(big)
    const err = await withTpm(tpm.open, (t) => nvReadAll(t, 0x01500002)).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(String(err)).to.match(/NV_Read/)
  })

  it('drops NV padding after the certificate and refuses an index that holds no DER', async () => {
    const rsa = await withTpm(tpm.open, (t) => readEkCertificate(t, 'rsa2048'))
    // the ECC P-256 index is free on swtpm (it certifies P-384): put a zero-padded certificate there
    await defineIndex(
      0x01c0000a,
      Buffer.concat([rsa, Buffer.alloc(100)]),
      'ownerread|ownerwrite|authread|authwrite',
    )
    const got = await withTpm(tpm.open, (t) => readEkCertificate(t, 'eccP256'))
    expect(new X509Certificate(got).raw).to.deep.equal(rsa)

    await tools('tpm2_nvundefine', ['0x01c0000a', '-C', 'o'])
    await defineIndex(0x01c0000a, Buffer.from('not a certificate'), 'ownerread|ownerwrite|authread|authwrite')
    await expect(withTpm(tpm.open, (t) => readEkCertificate(t, 'eccP256'))).to.be.rejectedWith(
      TpmParseError,
      'EK certificate at NV index 0x1c0000a: does not start with a DER SEQUENCE',
    )
    await tools('tpm2_nvundefine', ['0x01c0000a', '-C', 'o'])
    // a DER header promising more than the index holds
    await defineIndex(0x01c0000a, rsa.subarray(0, 600), 'ownerread|ownerwrite|authread|authwrite')
    await expect(withTpm(tpm.open, (t) => readEkCertificate(t, 'eccP256'))).to.be.rejectedWith(
      TpmParseError,
      /DER says \d+ bytes, the index holds 600/,
    )
  })

  it('reads the EK certificate chain indices from 0x01c00100 on, several certificates to an index', async () => {
    const rw = 'ownerread|ownerwrite|authread|authwrite'
    const chain = () => withTpm(tpm.open, (t) => readEkCertificateChain(t, 3))
    expect(await chain()).to.deep.equal([])
    // NV indices hold up to 2 KiB: small P-256 certificates share one, a manufacturer's RSA one fills one
    const a = testCertificate({ cn: 'A', ca: true }).der
    const b = testCertificate({ cn: 'B', ca: true }).der
    const root = new X509Certificate(tpm.ekCa!.root).raw
    await defineIndex(0x01c00100, Buffer.concat([a, b, Buffer.alloc(40)]), rw)
    expect(await chain()).to.deep.equal([a, b])
    await defineIndex(0x01c00101, root, rw)
    expect(await chain()).to.deep.equal([a, b, root])
    await defineIndex(0x01c00102, root, rw)
    await expect(chain()).to.be.rejectedWith(TpmParseError, 'more than 3 intermediate certificates')
    await tools('tpm2_nvundefine', ['0x01c00102', '-C', 'o'])
    await tools('tpm2_nvundefine', ['0x01c00101', '-C', 'o'])
    await defineIndex(0x01c00101, Buffer.from('padding only'), rw)
    await expect(chain()).to.be.rejectedWith(
      TpmParseError,
      'EK certificate chain at NV index 0x1c00101: holds no DER certificate',
    )
  })
})
