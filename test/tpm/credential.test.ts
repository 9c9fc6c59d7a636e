import { createHash, randomBytes, X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import { mutate, seededRandom } from '../support/fuzz.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  activateCredential,
  ekPublicKeyFromCertificate,
  makeCredential,
  objectName,
  parseQuoteAttest,
  parseSignature,
  quote,
  readEkCertificate,
  TpmParseError,
  verifyTpmSignature,
  withAttestationKey,
  withEndorsementKey,
  withTpm,
  TPMA_OBJECT,
  type EkKind,
  type MadeCredential,
} from '../../src/lib/tpm/index.js'
import { CredentialActivationError } from '../../src/lib/tpm/activate-credential.js'
import { ekPublicKeyFromPublicArea } from '../../src/lib/tpm/make-credential.js'
import { loadAttestationKey, withAttestationKeyUnderEk, type AkAlgorithm } from '../../src/lib/tpm/ek-ak.js'
import { flushContext } from '../../src/lib/tpm/commands.js'
import { tpm2Tools } from './tpm2-tools.js'

/** Activates `made` for a fresh AK under the EK of `kind`, after `prepare` built it from the AK's Name. */
async function roundTrip(
  tpm: SwtpmHandle,
  kind: EkKind,
  prepare: (akName: Buffer, ekPublicArea: Buffer) => MadeCredential | Promise<MadeCredential>,
  akAlgorithm: AkAlgorithm = 'ecc',
): Promise<Buffer> {
  return withTpm(tpm.open, (t) =>
    withEndorsementKey(t, kind, (ek) =>
      withAttestationKeyUnderEk(
        t,
        ek,
        async (ak) => activateCredential(t, ak, ek, await prepare(ak.name, ek.publicArea)),
        akAlgorithm,
      ),
    ),
  )
}

/** No transient object and no session left in the TPM: everything was flushed. */
async function expectNothingLoaded(tpm: SwtpmHandle, dir: string): Promise<void> {
  const tools = tpm2Tools(tpm, dir)
  expect((await tools('tpm2_getcap', ['handles-transient'])).stdout.trim()).to.equal('')
  expect((await tools('tpm2_getcap', ['handles-loaded-session'])).stdout.trim()).to.equal('')
}

describe('credential activation: MakeCredential in TypeScript, ActivateCredential on swtpm', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let other: SwtpmHandle
  let tmp: TempDir
  before(async () => {
    ;[tpm, other, tmp] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
      makeTempDir('constell-credential-'),
    ])
  })
  after(async () => {
    await Promise.all([tpm?.stop(), other?.stop(), tmp?.cleanup()])
  })
  afterEach(() => expectNothingLoaded(tpm, tmp.dir))

  const cases: Array<[EkKind, AkAlgorithm]> = [
    ['rsa2048', 'ecc'],
    ['rsa2048', 'rsa'],
    ['eccP256', 'ecc'],
    ['eccP384', 'ecc'],
  ]
  for (const [kind, akAlgorithm] of cases)
    it(`gives the credential back: ${kind} EK, ${akAlgorithm} AK under it`, async () => {
      const secret = randomBytes(kind === 'eccP384' ? 48 : 32)
      const got = await roundTrip(
        tpm,
        kind,
        (name, ekPub) => makeCredential(ekPublicKeyFromPublicArea(ekPub), name, secret),
        akAlgorithm,
      )
      expect(got).to.deep.equal(secret)
    })

  for (const kind of ['rsa2048', 'eccP384'] as const)
    it(`works from the verifier's view: the ${kind} EK key taken from the EK certificate`, async () => {
      const cert = new X509Certificate(await withTpm(tpm.open, (t) => readEkCertificate(t, kind)))
      const secret = Buffer.from('a short credential')
      const got = await roundTrip(tpm, kind, (name) =>
        makeCredential(ekPublicKeyFromCertificate(cert), name, secret),
      )
      expect(got).to.deep.equal(secret)
    })

  it('the AK under the EK is a restricted fixedTPM signing key that quotes, and reloads from its blobs', async () => {
    const nonce = randomBytes(32)
    await withTpm(tpm.open, (t) =>
      withEndorsementKey(t, 'rsa2048', async (ek) => {
        const blobs = await withAttestationKeyUnderEk(t, ek, async (ak) => {
          const A = TPMA_OBJECT
          const want =
            A.fixedTPM |
            A.fixedParent |
            A.sensitiveDataOrigin |
            A.userWithAuth |
            A.noDA |
            A.restricted |
            A.sign
          expect(ak.public.attributes).to.equal(want)
          expect(ak.name).to.deep.equal(objectName(ak.publicArea))
          const q = await quote(t, ak.handle, nonce, [0, 15])
          expect(verifyTpmSignature(ak.public, q.quoted, parseSignature(q.signature))).to.equal(true)
          expect(parseQuoteAttest(q.quoted).extraData).to.deep.equal(nonce)
          return { publicArea: ak.publicArea, privateArea: ak.privateArea, name: ak.name }
        })
        const again = await loadAttestationKey(t, ek, blobs)
        try {
          expect(again.name).to.deep.equal(blobs.name)
          const secret = randomBytes(16)
          const made = makeCredential(ekPublicKeyFromPublicArea(ek.publicArea), again.name, secret)
          expect(await activateCredential(t, again, ek, made)).to.deep.equal(secret)
        } finally {
          await flushContext(t, again.handle)
        }
      }),
    )
  })

  it('also activates for the existing endorsement-hierarchy primary AK (ak.ts)', async () => {
    const secret = randomBytes(32)
    const got = await withTpm(tpm.open, (t) =>
      withEndorsementKey(t, 'rsa2048', (ek) =>
        withAttestationKey(t, (ak) =>
          activateCredential(
            t,
            ak,
            ek,
            makeCredential(ekPublicKeyFromPublicArea(ek.publicArea), objectName(ak.publicArea), secret),
          ),
        ),
      ),
    )
    expect(got).to.deep.equal(secret)
  })

  it("refuses a credential made for another AK's Name: TPM_RC_INTEGRITY on the blob", async () => {
    const otherName = Buffer.concat([
      Buffer.from('000b', 'hex'),
      createHash('sha256').update('other AK').digest(),
    ])
    for (const kind of ['rsa2048', 'eccP256'] as const) {
      const err = await roundTrip(tpm, kind, (_name, ekPub) =>
        makeCredential(ekPublicKeyFromPublicArea(ekPub), otherName, randomBytes(32)),
      ).catch((e: unknown) => e)
      expect(err, kind).to.be.instanceOf(CredentialActivationError).with.property('reason', 'INTEGRITY')
      expect((err as CredentialActivationError).exitCode).to.equal(4)
      expect((err as Error).message).to.include('made for another AK or another EK')
    }
  })

  for (const kind of ['rsa2048', 'eccP384'] as const)
    it(`refuses a credential made for another TPM's ${kind} EK`, async () => {
      const otherCert = new X509Certificate(await withTpm(other.open, (t) => readEkCertificate(t, kind)))
      const err = await roundTrip(tpm, kind, (name) =>
        makeCredential(ekPublicKeyFromCertificate(otherCert), name, randomBytes(32)),
      ).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(CredentialActivationError)
      // RSA: the OAEP decryption fails (a reference TPM says VALUE, libtpms FAILURE and stays usable);
      // ECC: the ECDH yields another seed, so the outer HMAC does not match
      expect((err as CredentialActivationError).reason).to.be.oneOf(
        kind === 'rsa2048' ? ['VALUE', 'FAILURE'] : ['INTEGRITY'],
      )
      expect((err as Error).message).to.match(
        /made for another AK or another EK|does not decrypt with this EK/,
      )
    })

  for (const kind of ['rsa2048', 'eccP256'] as const)
    it(`fuzzed credential blobs and secrets for the ${kind} EK give CredentialActivationError, never a crash or a hang`, async function () {
      this.timeout(120_000)
      const rnd = seededRandom(0x19)
      const outcomes = new Map<string, number>()
      await withTpm(tpm.open, (t) =>
        withEndorsementKey(t, kind, (ek) =>
          withAttestationKeyUnderEk(t, ek, async (ak) => {
            const secret = randomBytes(32)
            const made = makeCredential(ekPublicKeyFromPublicArea(ek.publicArea), ak.name, secret)
            for (let i = 0; i < 200; i++) {
              const fuzzBlob = i % 2 === 0
              const input = {
                credentialBlob: fuzzBlob ? mutate(made.credentialBlob, rnd) : made.credentialBlob,
                encryptedSecret: fuzzBlob ? made.encryptedSecret : mutate(made.encryptedSecret, rnd),
              }
              try {
                const got = await activateCredential(t, ak, ek, input)
                // a mutation that changed nothing (e.g. a byte "flipped" to itself) activates
                expect(got, `iteration ${i}`).to.deep.equal(secret)
                outcomes.set('activated', (outcomes.get('activated') ?? 0) + 1)
              } catch (err: unknown) {
                if (!(err instanceof CredentialActivationError))
                  throw new Error(`iteration ${i}: unexpected ${String(err)}`, { cause: err })
                const key = err.reason ?? 'refused before the TPM'
                outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
              }
            }
            // the TPM and the session machinery are still fine afterwards
            expect(await activateCredential(t, ak, ek, made)).to.deep.equal(secret)
          }),
        ),
      )
      const seen = JSON.stringify([...outcomes])
      expect(outcomes.get('INTEGRITY') ?? 0, seen).to.be.greaterThan(30)
      expect(outcomes.get('SIZE') ?? 0, seen).to.be.greaterThan(10)
    })

  it('refuses bad verifier input before any TPM is involved', async () => {
    const cert = new X509Certificate(await withTpm(tpm.open, (t) => readEkCertificate(t, 'rsa2048')))
    const ek = ekPublicKeyFromCertificate(cert)
    const name = Buffer.concat([Buffer.from('000b', 'hex'), Buffer.alloc(32)])
    expect(() => makeCredential(ek, name, Buffer.alloc(33))).to.throw(RangeError, '1 to 32 bytes, got 33')
    expect(() => makeCredential(ek, name, Buffer.alloc(0))).to.throw(RangeError, 'got 0')
    expect(() => makeCredential(ek, name.subarray(0, 20), Buffer.alloc(8))).to.throw(
      TpmParseError,
      'TPM2B_NAME',
    )
    expect(() => makeCredential(ek, Buffer.from('0004' + '00'.repeat(20), 'hex'), Buffer.alloc(8))).to.throw(
      TpmParseError,
      'not SHA-256 or SHA-384',
    )
    // a certificate whose key no EK template produces (the local CA's own)
    expect(() => ekPublicKeyFromCertificate(new X509Certificate(tpm.ekCa!.root))).to.throw(
      TpmParseError,
      'not an EK Credential Profile key',
    )
    // an AK's public area is no EK
    const akPub = await withTpm(tpm.open, (t) => withAttestationKey(t, async (ak) => ak.publicArea))
    expect(() => ekPublicKeyFromPublicArea(akPub)).to.throw(TpmParseError, 'not a restricted decryption key')
  })
})
