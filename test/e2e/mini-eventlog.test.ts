/**
 * Event-log replay end to end (issue 32): a mini node's supervisor measures its boot into its swtpm
 * and writes the crypto-agile log as firmware would; `verify --json` lists what was measured per PCR
 * and `--raw` keeps the document the node sent. A node whose log no longer adds up to its quote
 * (one digest byte changed in the file the node serves) is refused by verify (exit 4) naming the PCR
 * and both values; the log put back, the same node is trusted again.
 *
 * About 10 s: one control plane on loopback addresses, no Helm.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parseEventLog } from '../../src/lib/attestation/eventlog/parse.js'
import { miniPaths } from '../../src/lib/mini/layout.js'
import { nodePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

interface EventLogJson {
  replayed: boolean
  bank?: string
  pcrs?: Array<{
    index: number
    replayed: boolean
    events: Array<{ type: string; digest: string; description: string }>
  }>
}
interface VerifyJson {
  trusted: boolean
  pcrs: Array<{ index: number; value: string }>
  eventLog?: EventLogJson
}

describe('mini nodes attest with an event log that replays (CLI processes)', function () {
  this.timeout(120_000)
  let dir: string
  let cleanup: () => Promise<void>
  let ws: string
  before(async () => {
    ;({ dir, cleanup } = await makeTempDir('constell-mini-eventlog-'))
    ws = path.join(dir, 'ws')
    const up = await runCli(
      [
        'mini',
        'up',
        '-C',
        ws,
        '--control-planes',
        '1',
        '--workers',
        '0',
        '--skip-helm',
        '--network',
        'loopback',
      ],
      { timeoutMs: 90_000 },
    )
    expect(up.code, up.stderr + up.stdout).to.equal(0)
  })
  after(async () => {
    await runCli(['mini', 'down', '-C', ws, '--purge'], { timeoutMs: 60_000 })
    await cleanup()
  })

  it('verify --json lists the replayed events per PCR, --raw writes the document the node sent', async () => {
    const raw = path.join(dir, 'attestation.json')
    const result = await runCli(['verify', '-C', ws, '--json', '--raw', raw])
    expect(result.code, result.stderr + result.stdout).to.equal(0)
    const report = JSON.parse(result.stdout) as VerifyJson
    expect(report.eventLog?.replayed).to.equal(true)
    expect(report.eventLog?.bank).to.equal('SHA-256')
    const pcrs = report.eventLog?.pcrs ?? []
    expect(pcrs.map((p) => p.index)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(pcrs.every((p) => p.replayed)).to.equal(true)
    const pcr4 = pcrs.find((p) => p.index === 4)?.events.map((e) => e.type)
    expect(pcr4).to.deep.equal(['EV_SEPARATOR', 'EV_EFI_ACTION', 'EV_EFI_BOOT_SERVICES_APPLICATION'])
    const logFile = nodePaths(miniPaths(ws).node('control-plane-0').root).tpmEventLog
    const doc = JSON.parse(await readFile(raw, 'utf8')) as { Attestation: { event_log: string } }
    expect(Buffer.from(doc.Attestation.event_log, 'base64')).to.deep.equal(await readFile(logFile))

    const plain = await runCli(['verify', '-C', ws])
    expect(plain.code, plain.stderr + plain.stdout).to.equal(0)
    expect(plain.stdout).to.match(
      /Event log \(SHA-256\): replayed ok for PCRs 0, 1, 2, 3, 4, 5, 6, 7, 8, 9; events per PCR: PCR 0: 2, /,
    )
  })

  it('a node whose log was tampered with is refused naming the PCR; the log restored, trusted again', async () => {
    const logFile = nodePaths(miniPaths(ws).node('control-plane-0').root).tpmEventLog
    const original = await readFile(logFile)
    const pcr8 = parseEventLog(original).events.find((e) => e.pcr === 8)
    if (!pcr8) throw new Error('the measured boot wrote no PCR 8 event')
    const tampered = Buffer.from(original)
    const digestAt = pcr8.offset + 4 + 4 + 4 + 2 // PCR index, type, digest count, algorithm
    tampered[digestAt] = (tampered[digestAt] ?? 0) ^ 0xff
    await writeFile(logFile, tampered)
    try {
      const refused = await runCli(['verify', '-C', ws])
      expect(refused.code, refused.stderr + refused.stdout).to.equal(4)
      expect(refused.stderr).to.match(
        /event log does not reproduce the quoted PCR 8: replayed [0-9a-f]{64}, quoted [0-9a-f]{64}/,
      )
    } finally {
      await writeFile(logFile, original)
    }
    const again = await runCli(['verify', '-C', ws, '--json'])
    expect(again.code, again.stderr + again.stdout).to.equal(0)
    expect((JSON.parse(again.stdout) as VerifyJson).trusted).to.equal(true)
  })
})
