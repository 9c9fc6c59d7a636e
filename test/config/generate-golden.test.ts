import { readdir, readFile, writeFile } from 'node:fs/promises'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { generateWorkspace, validateWorkspace, type Provider } from '../../src/lib/config/index.js'
import type { AttestationVariant } from '../../src/lib/attestation/index.js'
import { UsageError } from '../../src/lib/errors/index.js'

/** `<provider>-<variant>.yaml` under test/golden/config; `UPDATE_GOLDEN=1` rewrites them. */
const cases: ReadonlyArray<[Provider, AttestationVariant]> = [
  ['qemu', 'qemu-vtpm'],
  ['qemu', 'tpm-ek'],
  ['qemu', 'qemu-tdx'],
  ['aws', 'aws-sev-snp'],
  ['gcp', 'gcp-sev-snp'],
  ['azure', 'azure-sev-snp'],
  ['azure', 'azure-tdx'],
]

const golden = (provider: Provider, variant: AttestationVariant) =>
  new URL(`../golden/config/${provider}-${variant}.yaml`, import.meta.url)

describe('config generate: the written config per provider and variant', () => {
  let ws: TempDir
  beforeEach(async () => (ws = await makeTempDir('constell-generate-')))
  afterEach(() => ws.cleanup())

  const generate = (provider: Provider, variant?: AttestationVariant) =>
    generateWorkspace({
      workspace: ws.dir,
      provider,
      kubernetes: 'v1.31',
      variant,
      name: 'constell',
      endpoint: '127.0.0.1',
    })

  for (const [provider, variant] of cases) {
    it(`${provider} --attestation ${variant}: as the golden file, and valid`, async () => {
      const { config } = await generate(provider, variant)
      const got = await readFile(config, 'utf8')
      if (process.env.UPDATE_GOLDEN === '1') await writeFile(golden(provider, variant), got)
      expect(got).to.equal(await readFile(golden(provider, variant), 'utf8'))
      const result = await validateWorkspace(ws.dir)
      expect(result.valid, JSON.stringify(result.files)).to.equal(true)
    })
  }

  for (const [provider, variant] of [
    ['aws', 'aws-sev-snp'],
    ['gcp', 'gcp-sev-snp'],
    ['azure', 'azure-sev-snp'],
    ['qemu', 'qemu-vtpm'],
  ] as const) {
    it(`${provider} without --attestation writes ${variant}`, async () => {
      const { config } = await generate(provider)
      expect(await readFile(config, 'utf8')).to.equal(await readFile(golden(provider, variant), 'utf8'))
    })
  }

  for (const [provider, variant, allowed] of [
    ['aws', 'azure-tdx', 'aws-sev-snp'],
    ['gcp', 'tpm-ek', 'gcp-sev-snp'],
    ['azure', 'qemu-vtpm', 'azure-sev-snp, azure-tdx'],
    ['qemu', 'aws-sev-snp', 'qemu-vtpm, tpm-ek, qemu-tdx'],
  ] as const) {
    it(`${provider} --attestation ${variant} is a usage error naming ${allowed}, writing nothing`, async () => {
      const err = await generate(provider, variant).then(
        () => expect.fail('generated'),
        (e: unknown) => e,
      )
      expect(err).to.be.instanceOf(UsageError)
      expect((err as UsageError).exitCode).to.equal(2)
      expect((err as UsageError).message).to.equal(
        `--attestation ${variant} is not available on ${provider}; it allows ${allowed}`,
      )
      expect(await readdir(ws.dir)).to.deep.equal([])
    })
  }
})
