/**
 * Signed reference measurements end to end, as processes and without a cluster: an image builder
 * signs Constellation's v2 measurements envelope with `constellation measurements sign`, publishes
 * it over HTTP, and an operator's `config fetch-measurements` refuses a copy tampered with on the
 * way (a mirror that rewrote one PCR) and takes the genuine one, for its own variant only.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { hex, opensslKeyPair, opensslVerifies, serveRoutes } from '../support/signed-measurements.js'

const entry = (csp: string, variant: string, byte: number) => ({
  csp,
  attestationVariant: variant,
  measurements: {
    4: { expected: hex(byte), warnOnly: false },
    9: { expected: hex(byte + 1), warnOnly: false },
    15: { expected: hex(0), warnOnly: false },
  },
})

/** The shape Constellation's image pipeline publishes (measurements envelope, v2). */
const ENVELOPE = `${JSON.stringify(
  {
    version: 'v2.99.0',
    ref: '-',
    stream: 'stable',
    list: [entry('AWS', 'aws-sev-snp', 0x10), entry('QEMU', 'qemu-vtpm', 0x40)],
  },
  null,
  2,
)}\n`

describe('signed measurements, builder to operator (e2e)', function () {
  this.timeout(60_000)
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir('constell-e2e-signm-')))
  afterEach(() => tmp.cleanup())

  it('a tampered publication is refused with the config untouched; the genuine one is written', async () => {
    const builderDir = path.join(tmp.dir, 'builder')
    const workspace = path.join(tmp.dir, 'operator')
    const published = path.join(builderDir, 'measurements.json')
    const gen = await runCli(['config', 'generate', 'qemu', '-C', workspace])
    expect(gen.code, gen.stderr + gen.stdout).to.equal(0)
    await mkdir(builderDir)
    const key = opensslKeyPair(builderDir, 'builder')
    await copyFile(key.pub, path.join(workspace, 'builder.pub')) // the operator pins the public half
    await writeFile(published, ENVELOPE)
    const sign = await runCli(['measurements', 'sign', '--key', key.key, published])
    expect(sign.code, sign.stderr + sign.stdout).to.equal(0)
    const signature = await readFile(`${published}.sig`, 'utf8')
    expect(opensslVerifies(published, signature, key.pub, tmp.dir), 'openssl agrees').to.equal(true)

    const config = path.join(workspace, 'constellation-conf.yaml')
    await writeFile(config, `${await readFile(config, 'utf8')}measurementsPublicKey: builder.pub\n`)
    const before = await readFile(config)
    const tampered = ENVELOPE.replace(hex(0x40), hex(0x41))
    const server = await serveRoutes({
      '/genuine/measurements.json': ENVELOPE,
      '/genuine/measurements.json.sig': signature,
      '/mirror/measurements.json': tampered,
      '/mirror/measurements.json.sig': signature,
    })
    try {
      const fetch = (dir: string) =>
        runCli([
          'config',
          'fetch-measurements',
          '-C',
          workspace,
          '--url',
          `${server.base}/${dir}/measurements.json`,
          '--yes',
          '--json',
        ])
      const refused = await fetch('mirror')
      expect(refused.code, refused.stderr + refused.stdout).to.equal(1)
      expect((JSON.parse(refused.stdout) as { refused: string }).refused).to.equal('signature')
      expect(await readFile(config)).to.deep.equal(before)

      const accepted = await fetch('genuine')
      expect(accepted.code, accepted.stderr + accepted.stdout).to.equal(0)
      const report = JSON.parse(accepted.stdout) as { image: string; written: boolean }
      expect(report).to.include({ image: 'v2.99.0', written: true })
      const text = await readFile(config, 'utf8')
      expect(text).to.contain(hex(0x40)).and.contain(hex(0x41)).and.not.contain(hex(0x10))
    } finally {
      await server.close()
    }
  })
})
