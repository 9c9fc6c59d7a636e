import { createHash, X509Certificate } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  EkCertificateMissingError,
  ekPublicKeyFromCertificate,
  readEkCertificate,
  withEndorsementKey,
  withTpm,
  type EkKind,
} from '../../src/lib/tpm/index.js'
import { createEndorsementKey } from '../../src/lib/tpm/ek.js'
import { ekPublicKeyFromPublicArea } from '../../src/lib/tpm/make-credential.js'
import { flushContext } from '../../src/lib/tpm/commands.js'
import { EK_POLICY_A_SHA256, ekTemplate } from '../../src/lib/tpm/ek.js'
import { TPM_CC, TPM_RH } from '../../src/lib/tpm/constants.js'
import { publicAreaOf, tpm2Tools } from './tpm2-tools.js'

const spki = (cert: X509Certificate) => cert.publicKey.export({ type: 'spki', format: 'der' })

/** EK certificate ← swtpm-localca ← swtpm-localca-rootca, checked with node:crypto. */
function chainsTo(ek: X509Certificate, ca: { root: string; intermediate: string }): boolean {
  const intermediate = new X509Certificate(ca.intermediate)
  const root = new X509Certificate(ca.root)
  return (
    ek.checkIssued(intermediate) &&
    ek.verify(intermediate.publicKey) &&
    intermediate.checkIssued(root) &&
    intermediate.verify(root.publicKey) &&
    root.verify(root.publicKey)
  )
}

describe('endorsement key and its certificate on a manufactured swtpm', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let other: SwtpmHandle
  let tmp: TempDir
  before(async () => {
    ;[tpm, other, tmp] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
      makeTempDir('constell-ek-'),
    ])
  })
  after(async () => {
    await Promise.all([tpm?.stop(), other?.stop(), tmp?.cleanup()])
  })

  it('reads the RSA 2048 and ECC P-384 EK certificates from NV, each chaining to its own local CA only', async () => {
    const ca = tpm.ekCa!
    for (const kind of ['rsa2048', 'eccP384'] as const) {
      const cert = new X509Certificate(await withTpm(tpm.open, (t) => readEkCertificate(t, kind)))
      expect(chainsTo(cert, ca), `${kind} chains to its CA`).to.equal(true)
      expect(chainsTo(cert, other.ekCa!), `${kind} does not chain to another TPM's CA`).to.equal(false)
    }
  })

  it('reports the absent ECC P-256 certificate (swtpm certifies P-384) as EkCertificateMissingError', async () => {
    const err = await withTpm(tpm.open, (t) => readEkCertificate(t, 'eccP256')).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(EkCertificateMissingError).with.property('exitCode', 1)
    expect((err as Error).message).to.equal('the TPM has no ECC P-256 EK certificate at NV index 0x1c0000a')
    // the TPM is still usable after the refusal
    expect(await withTpm(tpm.open, (t) => readEkCertificate(t, 'rsa2048'))).to.have.length.greaterThan(500)
  })

  for (const kind of ['rsa2048', 'eccP384'] as const)
    it(`creates the ${kind} EK from the profile's template: its public key is the certificate's`, async () => {
      const cert = new X509Certificate(await withTpm(tpm.open, (t) => readEkCertificate(t, kind)))
      const ek = await withTpm(tpm.open, (t) => withEndorsementKey(t, kind, async (k) => k))
      const fromTpm = ekPublicKeyFromPublicArea(ek.publicArea)
      const fromCert = ekPublicKeyFromCertificate(cert)
      expect(fromTpm.key.export({ type: 'spki', format: 'der' })).to.deep.equal(spki(cert))
      expect({ ...fromTpm, key: undefined }).to.deep.equal({ ...fromCert, key: undefined })
      const otherCert = new X509Certificate(await withTpm(other.open, (t) => readEkCertificate(t, kind)))
      expect(spki(otherCert)).to.not.deep.equal(spki(cert), "another TPM's EK differs")
    })

  it('creates the ECC P-256 EK (template L-2) deterministically, and its name is nameAlg || H(public)', async () => {
    const [a, b] = await withTpm(tpm.open, async (t) => {
      const first = await createEndorsementKey(t, 'eccP256')
      await flushContext(t, first.handle)
      const second = await createEndorsementKey(t, 'eccP256')
      await flushContext(t, second.handle)
      return [first, second]
    })
    expect(a.publicArea).to.deep.equal(b.publicArea)
    expect(a.name).to.deep.equal(
      Buffer.concat([Buffer.from('000b', 'hex'), createHash('sha256').update(a.publicArea).digest()]),
    )
  })

  it('policy A is PolicySecret(TPM_RH_ENDORSEMENT) under SHA-256', () => {
    const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest()
    const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff])
    const policy = sha256(sha256(Buffer.alloc(32), u32(TPM_CC.PolicySecret), u32(TPM_RH.ENDORSEMENT)))
    expect(policy).to.deep.equal(EK_POLICY_A_SHA256)
  })

  const toolsKinds: Array<[EkKind, string]> = [
    ['rsa2048', 'rsa'],
    ['eccP256', 'ecc'],
  ]
  for (const [kind, alg] of toolsKinds)
    it(`our ${kind} EK is tpm2_createek -G ${alg}'s, byte for byte`, async () => {
      const tools = tpm2Tools(tpm, tmp.dir)
      await tools('tpm2_createek', ['-c', `ek-${alg}.ctx`, '-G', alg, '-u', `ek-${alg}.pub`])
      await tools('tpm2_flushcontext', ['-t'])
      const theirs = publicAreaOf(await readFile(path.join(tmp.dir, `ek-${alg}.pub`)))
      const ours = await withTpm(tpm.open, (t) => withEndorsementKey(t, kind, async (k) => k.publicArea))
      expect(ours).to.deep.equal(theirs)
      expect(ekTemplate(kind).subarray(0, 10)).to.deep.equal(
        theirs.subarray(0, 10),
        'type, nameAlg, attributes',
      )
    })
})
