import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  hex,
  measurementsJson,
  opensslKeyPair,
  opensslSign,
  opensslVerifies,
  serveRoutes,
  type KeyPair,
} from '../support/signed-measurements.js'

const SIGNED = { 4: [hex(0xb4), false], 8: [hex(0xb8), true], 15: [hex(0), false] } as const

describe('measurements sign and config fetch-measurements (built CLI)', () => {
  let tmp: TempDir
  let builder: KeyPair
  let file: string
  let config: string
  beforeEach(async () => {
    tmp = await makeTempDir('constell-signm-cli-')
    builder = opensslKeyPair(tmp.dir, 'builder')
    file = path.join(tmp.dir, 'measurements.json')
    await writeFile(file, measurementsJson('qemu-vtpm', SIGNED))
    const gen = await runCli(['config', 'generate', 'qemu', '-C', tmp.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    config = path.join(tmp.dir, 'constellation-conf.yaml')
  })
  afterEach(() => tmp.cleanup())

  it('sign writes FILE.sig that openssl verifies, prints to stdout with -o -, and never overwrites', async () => {
    const res = await runCli(['measurements', 'sign', '--key', builder.key, file])
    expect(res.code, res.stderr).to.equal(0)
    const sig = await readFile(`${file}.sig`, 'utf8')
    expect(opensslVerifies(file, sig, builder.pub, tmp.dir)).to.equal(true)
    expect(res.stdout + res.stderr, 'the key never shows').not.to.contain('PRIVATE KEY')

    const out = await runCli(['measurements', 'sign', '--key', builder.key, file, '--output', '-'])
    expect(out.code, out.stderr).to.equal(0)
    expect(opensslVerifies(file, out.stdout, builder.pub, tmp.dir)).to.equal(true)

    const again = await runCli(['measurements', 'sign', '--key', builder.key, file])
    expect(again.code).to.equal(1)
    expect(again.stderr).to.contain(`${file}.sig already exists`)
    expect(await readFile(`${file}.sig`, 'utf8')).to.equal(sig)
  })

  it('fetch-measurements writes what verifies (pinned key), asks on a non-TTY only with --yes', async () => {
    await writeFile(config, (await readFile(config, 'utf8')) + 'measurementsPublicKey: builder.pub\n')
    const server = await serveRoutes({
      '/m.json': await readFile(file),
      '/m.json.sig': opensslSign(file, builder.key),
    })
    try {
      const args = ['config', 'fetch-measurements', '-C', tmp.dir, '--url', `${server.base}/m.json`]
      const before = await readFile(config, 'utf8')
      const noYes = await runCli(args)
      expect(noYes.code, noYes.stderr).to.equal(2)
      expect(noYes.stderr).to.contain('refusing to change the config without confirmation')
      expect(noYes.stdout).to.contain('signature verified')
      expect(await readFile(config, 'utf8')).to.equal(before)

      const yes = await runCli([...args, '--yes', '--json'])
      expect(yes.code, yes.stderr).to.equal(0)
      const report = JSON.parse(yes.stdout) as {
        written: boolean
        variant: string
        pcrs: Array<{ index: number; next: string }>
      }
      expect(report).to.include({ written: true, variant: 'qemu-vtpm' })
      const after = await readFile(config, 'utf8')
      expect(after).to.contain(`"4":\n        expected: "${hex(0xb4)}"`)
      expect(after).to.contain(`"8":\n        expected: "${hex(0xb8)}"\n        warnOnly: false`) // the config's choice
      const validate = await runCli(['config', 'validate', '-C', tmp.dir])
      expect(validate.code, validate.stdout + validate.stderr).to.equal(0)
    } finally {
      await server.close()
    }
  })

  it('fetch-measurements refuses a tampered file, naming why, the config byte-identical', async () => {
    const sig = opensslSign(file, builder.key)
    await writeFile(file, (await readFile(file, 'utf8')).replace('b4b4', 'b4b5'))
    await writeFile(`${file}.sig`, sig)
    const before = await readFile(config)
    const url = pathToFileURL(file).href
    const res = await runCli([
      'config',
      'fetch-measurements',
      '-C',
      tmp.dir,
      '--url',
      url,
      '--public-key',
      builder.pub,
      '--yes',
      '--json',
    ])
    expect(res.code).to.equal(1)
    const out = JSON.parse(res.stdout) as { refused: string; error: { message: string } }
    expect(out.refused).to.equal('signature')
    expect(out.error.message).to.contain('signature does not match')
    expect(await readFile(config)).to.deep.equal(before)
  })

  it('fetch-measurements without a pinned or given key is a usage error', async () => {
    const res = await runCli([
      'config',
      'fetch-measurements',
      '-C',
      tmp.dir,
      '--url',
      pathToFileURL(file).href,
    ])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain('pins no measurementsPublicKey, and no --public-key was given')
  })

  it('config measurements says it is trust on first use', async () => {
    const res = await runCli(['config', 'measurements', '--help'])
    expect(res.stdout).to.contain('Trust on first use')
  })
})
