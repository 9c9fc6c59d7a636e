/**
 * TPM dictionary-attack protection and a node's power cuts (DESIGN §8): a TPM that loses power
 * without TPM2_Shutdown counts one failure at its next startup if a DA-protected authorization was
 * used since the last one, and swtpm locks out after three (every quote then fails with 0x921 for
 * 1000 s). Machines crash and get hard-reset, so nothing a node does with its TPM in a boot may
 * count. Each case does one thing a node does every boot, cuts the power (SIGKILL: swtpm gets no
 * chance to shut the TPM down), starts the TPM again and reads the lockout counter with tpm2_getcap.
 */
import { randomBytes } from 'node:crypto'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  activateCredential,
  attestationKeyName,
  extendPcr,
  makeCredential,
  objectName,
  quote,
  readEkCertificate,
  readEkCertificateChain,
  shutdownTpm,
  withAttestationKey,
  withEndorsementKey,
  withTpm,
  type EkKind,
} from '../../src/lib/tpm/index.js'
import { ekPublicKeyFromPublicArea } from '../../src/lib/tpm/make-credential.js'
import { readDictionaryAttackState } from '../../src/lib/tpm/dictionary-attack.js'
import { withAttestationKeyUnderEk } from '../../src/lib/tpm/ek-ak.js'
import { createPrimary, flushContext } from '../../src/lib/tpm/commands.js'
import { akTemplate } from '../../src/lib/tpm/ak.js'
import { TPM_RH, TPMA_OBJECT } from '../../src/lib/tpm/constants.js'
import type { TpmTransport } from '../../src/lib/tpm/transport.js'
import { tpm2Tools } from './tpm2-tools.js'

/** What tpm2_getcap properties-variable says about lockout; our client must say the same. */
async function lockoutByTools(
  tpm: SwtpmHandle,
  dir: string,
): Promise<{ counter: number; inLockout: number }> {
  const { stdout } = await tpm2Tools(tpm, dir)('tpm2_getcap', ['properties-variable'])
  const counter = /TPM2_PT_LOCKOUT_COUNTER:\s*(0x[0-9a-fA-F]+)/.exec(stdout)?.[1]
  const inLockout = /inLockout:\s*(\d+)/.exec(stdout)?.[1]
  if (counter === undefined || inLockout === undefined) throw new Error(`tpm2_getcap said:\n${stdout}`)
  const ours = await withTpm(tpm.open, readDictionaryAttackState)
  expect(ours, 'our client reads what tpm2_getcap reads').to.deep.include({
    lockoutCounter: Number(counter),
    inLockout: inLockout === '1',
  })
  return { counter: Number(counter), inLockout: Number(inLockout) }
}

/** The activation a tpm-ek node runs for every join, init, verify and recover. */
async function activate(t: TpmTransport, kind: EkKind): Promise<void> {
  await withEndorsementKey(t, kind, (ek) =>
    withAttestationKey(t, async (ak) => {
      const secret = randomBytes(32)
      const made = makeCredential(ekPublicKeyFromPublicArea(ek.publicArea), objectName(ak.publicArea), secret)
      expect(await activateCredential(t, ak, ek, made)).to.deep.equal(secret)
    }),
  )
}

/** An AK template as ours, but DA-protected: what every key was before noDA. */
function daProtectedKeyTemplate(): Buffer {
  const template = akTemplate()
  template.writeUInt32BE(template.readUInt32BE(4) & ~TPMA_OBJECT.noDA, 4)
  return template
}

describe('TPM dictionary-attack lockout: a node survives power cuts (swtpm, tpm2-tools)', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let tmp: TempDir
  beforeEach(async () => {
    ;[tpm, tmp] = await Promise.all([startSwtpm({ ekCertificate: true }), makeTempDir('constell-da-')])
  })
  afterEach(() => Promise.all([tpm?.stop(), tmp?.cleanup()]))

  const perBoot: Record<string, (t: TpmTransport) => Promise<unknown>> = {
    'a quote with the AK (every attestation: init, join, verify, status, recover)': (t) =>
      withAttestationKey(t, (ak) => quote(t, ak.handle, randomBytes(32), [0, 15])),
    "the AK's Name (the join service knows its own TPM by it)": (t) => attestationKeyName(t),
    'credential activation with the ECC P-384 EK (high range: policy B)': (t) => activate(t, 'eccP384'),
    'credential activation with the RSA 2048 EK (low range: policy A)': (t) => activate(t, 'rsa2048'),
    'credential activation with an ECC P-256 EK (low range: policy A)': (t) => activate(t, 'eccP256'),
    'an AK created and loaded under the ECC P-384 EK, then quoting': (t) =>
      withEndorsementKey(t, 'eccP384', (ek) =>
        withAttestationKeyUnderEk(t, ek, (ak) => quote(t, ak.handle, randomBytes(32), [0])),
      ),
    'PCR 15 extended (the node lock)': (t) => extendPcr(() => Promise.resolve(t), 15, randomBytes(32)),
    'the EK certificates read from NV': async (t) => {
      await readEkCertificate(t, 'eccP384')
      await readEkCertificate(t, 'rsa2048')
      await readEkCertificateChain(t, 3)
    },
  }
  for (const [name, use] of Object.entries(perBoot))
    it(`does not count: ${name}, then a power cut`, async () => {
      // three boots that each end in a power cut: a counted one would lock the TPM out at the third
      for (let boot = 1; boot <= 3; boot++) {
        await withTpm(tpm.open, use)
        await tpm.restart({ powerCut: true })
        expect(await lockoutByTools(tpm, tmp.dir), `after power cut ${boot}`).to.deep.equal({
          counter: 0,
          inLockout: 0,
        })
      }
    })

  const useProtectedKey = (t: TpmTransport) =>
    createPrimary(t, TPM_RH.ENDORSEMENT, daProtectedKeyTemplate()).then(async (key) => {
      try {
        await quote(t, key.handle, randomBytes(32), [0])
      } finally {
        await flushContext(t, key.handle)
      }
    })

  it("the check itself: a DA-protected key's use, then a power cut, counts (and three lock the TPM out)", async () => {
    expect(await withTpm(tpm.open, readDictionaryAttackState), 'swtpm as manufactured').to.deep.equal({
      lockoutCounter: 0,
      maxTries: 3,
      recoveryTimeS: 1000,
      inLockout: false,
    })
    for (let boot = 1; boot <= 3; boot++) {
      await withTpm(tpm.open, useProtectedKey)
      await tpm.restart({ powerCut: true })
      expect((await lockoutByTools(tpm, tmp.dir)).counter, `after power cut ${boot}`).to.equal(boot)
    }
    expect((await lockoutByTools(tpm, tmp.dir)).inLockout).to.equal(1)
    await expect(withTpm(tpm.open, useProtectedKey)).to.be.rejectedWith(/0x921/)
  })

  it('an orderly shutdown (TPM2_Shutdown before the power goes) counts nothing, even after a DA-protected use', async () => {
    for (let boot = 1; boot <= 3; boot++) {
      await withTpm(tpm.open, useProtectedKey)
      await shutdownTpm(tpm.open)
      await tpm.restart({ powerCut: true })
    }
    expect(await lockoutByTools(tpm, tmp.dir)).to.deep.equal({ counter: 0, inLockout: 0 })
  })
})
