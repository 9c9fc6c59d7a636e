import { execFile } from 'node:child_process'
import { randomBytes, createHash } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { parsePublic, readPcrs, TPM_ALG } from '../../src/lib/tpm/index.js'
import { createIssuer, createValidator } from '../../src/lib/attestation/index.js'
import { publicKeyOf } from '../../src/lib/tpm/structures.js'
import { decodeDocument, encodeDocument } from '../../src/lib/attestation/document.js'
import { qualifyingData } from '../../src/lib/attestation/vtpm-quote.js'

const run = promisify(execFile)
const ALL = Array.from({ length: 24 }, (_, i) => i)

describe('attestation cross-checked with tpm2-tools', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let tmp: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => {
    tpm = await startSwtpm()
    tmp = await makeTempDir()
  })
  afterEach(async () => {
    await tpm.stop()
    await tmp.cleanup()
  })
  const tools = (cmd: string, args: string[]) =>
    run(cmd, args, {
      cwd: tmp.dir,
      env: { ...process.env, TPM2TOOLS_TCTI: `swtpm:host=${tpm.host},port=${tpm.port}` },
    })

  /** tpm2-tools' own EK and ECC AK as contexts in the temp dir; swtpm has no resource manager, so flush. */
  async function createToolsAk(ekExtra: string[] = [], akExtra: string[] = []) {
    await tools('tpm2_createek', ['-c', 'ek.ctx', '-G', 'rsa', ...ekExtra])
    await tools('tpm2_flushcontext', ['-t'])
    await tools('tpm2_createak', [
      '-C',
      'ek.ctx',
      '-c',
      'ak.ctx',
      '-G',
      'ecc',
      '-g',
      'sha256',
      '-s',
      'ecdsa',
      ...akExtra,
    ])
    await tools('tpm2_flushcontext', ['-t'])
  }

  it('tpm2_checkquote verifies our quote, its qualifying data and PCR digest', async () => {
    const userData = randomBytes(32)
    const nonce = randomBytes(32)
    const doc = decodeDocument(await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce))
    const quote = doc.quotes[0]!
    const f = (name: string) => path.join(tmp.dir, name)
    await writeFile(f('ak.pem'), publicKeyOf(parsePublic(doc.akPub)).export({ type: 'spki', format: 'pem' }))
    await writeFile(f('quote.msg'), quote.quote)
    await writeFile(f('quote.sig'), quote.rawSig)
    // tpm2_checkquote's PCR file is tpm2_quote's in-memory dump; let tpm2-tools read the PCRs with a
    // throw-away AK of its own so it recomputes our quote's digest from values it read itself
    await createToolsAk()
    await tools('tpm2_quote', [
      '-c',
      'ak.ctx',
      '-l',
      'sha256:' + ALL.join(','),
      '-o',
      f('pcrs.bin'),
      '-g',
      'sha256',
    ])
    await tools('tpm2_flushcontext', ['-t'])
    const { stdout } = await tools('tpm2_checkquote', [
      '-u',
      f('ak.pem'),
      '-m',
      f('quote.msg'),
      '-s',
      f('quote.sig'),
      '-f',
      f('pcrs.bin'),
      '-g',
      'sha256',
      '-q',
      qualifyingData(userData, nonce).toString('hex'),
    ])
    expect(stdout).to.include('pcrs:')
    await expect(
      tools('tpm2_checkquote', [
        '-u',
        f('ak.pem'),
        '-m',
        f('quote.msg'),
        '-s',
        f('quote.sig'),
        '-g',
        'sha256',
        '-q',
        qualifyingData(userData, randomBytes(32)).toString('hex'),
      ]),
    ).to.be.rejected
  })

  it('a quote made by tpm2_createak + tpm2_quote verifies with our validator', async () => {
    const userData = createHash('sha256').update('key').digest()
    const nonce = randomBytes(32)
    await createToolsAk(['-u', 'ek.pub'], ['-u', 'ak.pub', '-n', 'ak.name'])
    await tools('tpm2_quote', [
      '-c',
      'ak.ctx',
      '-l',
      'sha256:' + ALL.join(','),
      '-q',
      qualifyingData(userData, nonce).toString('hex'),
      '-m',
      'q.msg',
      '-s',
      'q.sig',
      '-g',
      'sha256',
    ])
    await tools('tpm2_flushcontext', ['-t'])
    const akPub2b = await readFile(path.join(tmp.dir, 'ak.pub'))
    const pcrs = await readPcrs(tpm.open, ALL)
    const doc = encodeDocument({
      akPub: akPub2b.subarray(2), // TPM2B_PUBLIC → TPMT_PUBLIC
      quotes: [
        {
          quote: await readFile(path.join(tmp.dir, 'q.msg')),
          rawSig: await readFile(path.join(tmp.dir, 'q.sig')),
          hashAlg: TPM_ALG.SHA256,
          pcrs,
        },
      ],
      userData,
    })
    const measurements = new Map([[15, { expected: Buffer.alloc(32), warnOnly: false }]])
    const got = await createValidator('qemu-vtpm', measurements).validate(doc, nonce)
    expect(got.userData).to.deep.equal(userData)
    await expect(
      createValidator('qemu-vtpm', measurements).validate(doc, randomBytes(32)),
    ).to.be.rejectedWith(/not bound to this nonce/)
  })
})
