/** One duration grammar for every flag: Go durations plus `d`, bounded by what a timer can hold. */
import { parseDuration } from '../../src/lib/system/index.js'
import { UsageError } from '../../src/lib/errors/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

describe('parseDuration', () => {
  const valid: Record<string, number> = {
    '300ms': 300,
    '90s': 90_000,
    '1.5h': 5_400_000,
    '1h30m': 5_400_000,
    '2m3.5s': 123_500,
    '7d': 604_800_000,
    '1500us': 2, // whole milliseconds, rounded up
    '2µs': 1,
    '1000000ns': 1,
    '.5s': 500,
    '24d20h31m23.647s': 2 ** 31 - 1,
  }
  for (const [text, ms] of Object.entries(valid)) {
    it(`reads ${text} as ${ms} ms`, () => expect(parseDuration(text, '--timeout')).to.equal(ms))
  }

  const invalid: Record<string, string> = {
    '600h': '--timeout "600h" is too long: the maximum is 596h31m23.647s (about 24.8 days)',
    '99999999h': 'is too long',
    '24d20h31m23.648s': 'is too long',
    '': 'is not a duration above zero',
    '0s': 'is not a duration above zero',
    '5': 'is not a duration like 90s',
    '5 m': 'is not a duration like 90s',
    '-5m': 'is not a duration like 90s',
    '1.2.3s': 'is not a duration like 90s',
    '5y': 'is not a duration like 90s',
  }
  for (const [text, want] of Object.entries(invalid)) {
    it(`refuses ${JSON.stringify(text)} as a usage error`, () => {
      expect(() => parseDuration(text, '--timeout'))
        .to.throw(UsageError, want)
        .with.property('exitCode', 2)
    })
  }
})

describe('duration flags (built CLI)', () => {
  let ws: { dir: string; cleanup: () => Promise<void> }
  before(async () => {
    ws = await makeTempDir()
    await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
  })
  after(async () => ws.cleanup())

  for (const value of ['600h', '99999999h']) {
    it(`init --timeout ${value} is a usage error naming the flag and the maximum`, async () => {
      const res = await runCli(['init', '-C', ws.dir, '--timeout', value])
      expect(res.code, res.stderr).to.equal(2)
      expect(res.stderr).to.contain(`--timeout "${value}" is too long: the maximum is 596h31m23.647s`)
    })
  }

  it('bootstrap-data generate --token-ttl takes the same grammar and bound', async () => {
    const res = await runCli(['bootstrap-data', 'generate', '-f', 'none.yaml', '--token-ttl', '1000h'])
    expect(res.code, res.stderr).to.equal(2)
    expect(res.stderr).to.contain('--token-ttl "1000h" is too long')
  })
})
