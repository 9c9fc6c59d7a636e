import { createHash, X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import {
  extendPcr,
  parsePublic,
  parseQuoteAttest,
  parseSignature,
  quote,
  readPcrs,
  TPM_ALG,
  openSwtpm,
  openTpmDevice,
  pcrRead,
  verifyTpmSignature,
  withAttestationKey,
  withTpm,
} from '../../src/lib/tpm/index.js'
import { getRandom, pcrEvent, readPublicArea, startup } from '../../src/lib/tpm/commands.js'
import { EkCertificateMissingError, readEkCertificate } from '../../src/lib/tpm/ek.js'
import { TpmError, TpmUnavailableError } from '../../src/lib/tpm/errors.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()
const ZERO = Buffer.alloc(32)

describe('tpm client against swtpm', function () {
  let tpm: SwtpmHandle
  beforeEach(async () => (tpm = await startSwtpm()))
  afterEach(() => tpm.stop())

  it('sessions through one swtpm opener take turns: the next opens once the last one closed', async () => {
    const open = openSwtpm('127.0.0.1', tpm.port)
    const first = await open()
    let secondOpened = false
    const second = open().then((t) => ((secondOpened = true), t))
    await new Promise((r) => setTimeout(r, 100))
    expect(secondOpened, 'waits while the first session is open').to.equal(false)
    await first.close()
    const t = await second
    expect((await pcrRead(t, [15])).get(15)).to.deep.equal(ZERO)
    await t.close()
    // many at once all complete, in turn
    const reads = await Promise.all(Array.from({ length: 20 }, () => readPcrs(open, [15])))
    expect(reads.every((r) => r.get(15)?.equals(ZERO))).to.equal(true)
  })

  it('starts (already started is fine) and returns random bytes', async () => {
    const bytes = await withTpm(tpm.open, async (t) => {
      await startup(t)
      return getRandom(t, 16)
    })
    expect(bytes).to.have.length(16)
  })

  it('reads more than eight PCRs and extends one', async () => {
    const all = Array.from({ length: 24 }, (_, i) => i)
    const before = await readPcrs(tpm.open, all)
    expect([...before.keys()]).to.deep.equal(all)
    expect(before.get(15)).to.deep.equal(ZERO)
    const digest = sha256(Buffer.from('cluster'))
    await extendPcr(tpm.open, 15, digest)
    const after = await readPcrs(tpm.open, [15])
    expect(after.get(15)).to.deep.equal(sha256(Buffer.concat([ZERO, digest])))
  })

  it('PCR_Event extends with the hash of the data', async () => {
    const data = Buffer.from('event')
    await withTpm(tpm.open, (t) => pcrEvent(t, 16, data))
    expect((await readPcrs(tpm.open, [16])).get(16)).to.deep.equal(
      sha256(Buffer.concat([ZERO, sha256(data)])),
    )
  })

  it('quotes with a stable AK whose signature verifies over the PCR digest', async () => {
    const nonce = Buffer.alloc(32, 7)
    const pcrs = [0, 15]
    const run = () =>
      withTpm(tpm.open, (t) =>
        withAttestationKey(t, async (ak) => ({
          ak,
          q: await quote(t, ak.handle, nonce, pcrs),
          pub: await readPublicArea(t, ak.handle),
        })),
      )
    const first = await run()
    const second = await run()
    expect(first.ak.publicArea).to.deep.equal(second.ak.publicArea, 'AK is derived deterministically')
    expect(first.pub).to.deep.equal(first.ak.publicArea)
    const attest = parseQuoteAttest(first.q.quoted)
    expect(attest.extraData).to.deep.equal(nonce)
    expect(attest.pcrSelections).to.deep.equal([{ hashAlg: TPM_ALG.SHA256, pcrs }])
    const values = await readPcrs(tpm.open, pcrs)
    expect(attest.pcrDigest).to.deep.equal(
      sha256(Buffer.concat(pcrs.map((i) => values.get(i) ?? Buffer.alloc(0)))),
    )
    const sig = parseSignature(first.q.signature)
    expect(sig.sigAlg).to.equal(TPM_ALG.ECDSA)
    const pub = parsePublic(first.ak.publicArea)
    expect(verifyTpmSignature(pub, first.q.quoted, sig)).to.be.true
    const tampered = Buffer.from(first.q.quoted)
    tampered[tampered.length - 1]! ^= 1
    expect(verifyTpmSignature(pub, tampered, sig)).to.be.false
  })

  it('flushes the AK even when the work fails, so slots do not run out', async () => {
    for (let i = 0; i < 5; i++) {
      await expect(
        withTpm(tpm.open, (t) => withAttestationKey(t, () => Promise.reject(new Error('boom')))),
      ).to.be.rejectedWith('boom')
    }
    await withTpm(tpm.open, (t) => withAttestationKey(t, async () => undefined))
  })

  it('reports a missing EK certificate as EkCertificateMissingError and a TPM refusal with its response code', async () => {
    await expect(withTpm(tpm.open, (t) => readEkCertificate(t, 'rsa2048'))).to.be.rejectedWith(
      EkCertificateMissingError,
      'no RSA 2048 EK certificate at NV index 0x1c00002',
    )
    const err = await extendPcr(tpm.open, 30, ZERO).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(TpmError)
    expect((err as TpmError).responseCode).to.be.a('number')
  })

  it('reads the EK certificate from NV when the TPM was manufactured with one', async function () {
    this.timeout(60_000)
    const manufactured = await startSwtpm({ ekCertificate: true })
    try {
      const der = await withTpm(manufactured.open, (t) => readEkCertificate(t, 'rsa2048'))
      const cert = new X509Certificate(der)
      expect(cert.publicKey.asymmetricKeyType).to.equal('rsa')
      expect(cert.raw.length).to.equal(der.length)
    } finally {
      await manufactured.stop()
    }
  })

  it('names the endpoint when swtpm is not reachable: a setup error (exit 1 with a hint), not a bug', async () => {
    await tpm.stop()
    const err = await readPcrs(tpm.open, [0]).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(TpmUnavailableError).with.property('exitCode', 1)
    expect((err as Error).message).to.match(/^connecting to swtpm at 127\.0\.0\.1:\d+$/)
    expect((err as TpmUnavailableError).hint).to.include('swtpm')
  })

  it('names the device when the TPM device cannot be opened', async () => {
    const err = await readPcrs(openTpmDevice('/nonexistent/tpmrm0'), [0]).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(TpmUnavailableError)
    expect((err as Error).message).to.equal('opening TPM device /nonexistent/tpmrm0')
    expect((err as Error).cause).to.have.property('code', 'ENOENT')
  })
})
