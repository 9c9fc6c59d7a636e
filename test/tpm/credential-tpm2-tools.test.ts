import { randomBytes, X509Certificate } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  activateCredential,
  ekPublicKeyFromCertificate,
  makeCredential,
  readEkCertificate,
  withEndorsementKey,
  withTpm,
  type EkKind,
  type EkPublicKey,
} from '../../src/lib/tpm/index.js'
import { ekPublicKeyFromPublicArea } from '../../src/lib/tpm/make-credential.js'
import { withAttestationKeyUnderEk } from '../../src/lib/tpm/ek-ak.js'
import {
  decodeTss2Credential,
  encodeTss2Credential,
  publicAreaOf,
  tpm2bPublic,
  tpm2Tools,
} from './tpm2-tools.js'

describe('credential activation cross-checked with tpm2-tools', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let tmp: TempDir
  let tools: ReturnType<typeof tpm2Tools>
  const f = (name: string) => path.join(tmp.dir, name)
  beforeEach(async () => {
    ;[tpm, tmp] = await Promise.all([startSwtpm({ ekCertificate: true }), makeTempDir('constell-credtools-')])
    tools = tpm2Tools(tpm, tmp.dir)
  })
  afterEach(async () => {
    await Promise.all([tpm?.stop(), tmp?.cleanup()])
  })

  /** tpm2_createek + tpm2_createak as contexts; swtpm has no resource manager, so flush after each. */
  async function toolsEkAndAk(alg: 'rsa' | 'ecc'): Promise<{ ekPublicArea: Buffer; akName: Buffer }> {
    await tools('tpm2_createek', ['-c', 'ek.ctx', '-G', alg, '-u', 'ek.pub'])
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
      '-n',
      'ak.name',
    ])
    await tools('tpm2_flushcontext', ['-t'])
    return { ekPublicArea: publicAreaOf(await readFile(f('ek.pub'))), akName: await readFile(f('ak.name')) }
  }

  /** tpm2_activatecredential under a PolicySecret(endorsement) session, as its man page shows. */
  async function toolsActivate(file: string): Promise<Buffer> {
    try {
      await tools('tpm2_startauthsession', ['--policy-session', '-S', 'session.ctx'])
      await tools('tpm2_policysecret', ['-S', 'session.ctx', '-c', 'e'])
      await tools('tpm2_activatecredential', [
        '-c',
        'ak.ctx',
        '-C',
        'ek.ctx',
        '-i',
        file,
        '-o',
        'certinfo.out',
        '-P',
        'session:session.ctx',
      ])
      return await readFile(f('certinfo.out'))
    } finally {
      await tools('tpm2_flushcontext', ['session.ctx'])
      await tools('tpm2_flushcontext', ['-t'])
    }
  }

  const toolsKeys: Array<[string, 'rsa' | 'ecc', (ekPublicArea: Buffer) => Promise<EkPublicKey>]> = [
    [
      'RSA EK, key taken from the EK certificate in NV',
      'rsa',
      async () =>
        ekPublicKeyFromCertificate(
          new X509Certificate(await withTpm(tpm.open, (t) => readEkCertificate(t, 'rsa2048'))),
        ),
    ],
    ['ECC P-256 EK, key taken from tpm2_createek -u', 'ecc', async (pub) => ekPublicKeyFromPublicArea(pub)],
  ]
  for (const [name, alg, ekKey] of toolsKeys)
    it(`tpm2_activatecredential recovers our MakeCredential's secret (${name})`, async () => {
      const { ekPublicArea, akName } = await toolsEkAndAk(alg)
      const ek = await ekKey(ekPublicArea)
      const secret = randomBytes(32)
      await writeFile(f('ours.cred'), encodeTss2Credential(makeCredential(ek, akName, secret)))
      expect(await toolsActivate('ours.cred')).to.deep.equal(secret)
      // and it refuses one made for another Name, as ours does
      const otherName = Buffer.from(akName)
      otherName[otherName.length - 1]! ^= 1
      await writeFile(f('other.cred'), encodeTss2Credential(makeCredential(ek, otherName, secret)))
      await expect(toolsActivate('other.cred')).to.be.rejectedWith(/integrity check failed|0x1df/i)
    })

  for (const kind of ['rsa2048', 'eccP256', 'eccP384'] as const satisfies readonly EkKind[])
    it(`our ActivateCredential recovers tpm2_makecredential -T none's secret (${kind} EK)`, async () => {
      const secret = randomBytes(32)
      await writeFile(f('secret.bin'), secret)
      const got = await withTpm(tpm.open, (t) =>
        withEndorsementKey(t, kind, (ek) =>
          withAttestationKeyUnderEk(t, ek, async (ak) => {
            await writeFile(f('ek.pub'), tpm2bPublic(ek.publicArea))
            // -T none: tpm2-tools computes it in software, the TPM (busy with our session) is not asked
            await tools('tpm2_makecredential', [
              '-T',
              'none',
              '-u',
              'ek.pub',
              '-s',
              'secret.bin',
              '-n',
              ak.name.toString('hex'),
              '-o',
              'theirs.cred',
            ])
            return activateCredential(t, ak, ek, decodeTss2Credential(await readFile(f('theirs.cred'))))
          }),
        ),
      )
      expect(got).to.deep.equal(secret)
    })
})
