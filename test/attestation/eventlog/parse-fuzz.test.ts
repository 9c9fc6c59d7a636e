import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../../support/chai.js'
import { REPO_ROOT } from '../../support/cli.js'
import { mutate, seededRandom } from '../../support/fuzz.js'
import { describeEvent } from '../../../src/lib/attestation/eventlog/describe.js'
import { EventLogParseError, MAX_EVENTS, parseEventLog } from '../../../src/lib/attestation/eventlog/parse.js'
import { replayEventLog } from '../../../src/lib/attestation/eventlog/replay.js'
import { encodeEventLog, pcrsAfter } from '../../../src/lib/attestation/eventlog/write.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import { TPM_ALG } from '../../../src/lib/tpm/index.js'
import { BOOT } from './boot-log.js'

const INPUTS = 12_000

describe('event log parser fuzz', function () {
  it(`${INPUTS} mutated logs: each parses or fails with a clean error naming event and offset`, async () => {
    // ours, and a real firmware's (three banks, EFI variables, shim and GRUB events)
    const seeds = [
      encodeEventLog(BOOT),
      await readFile(path.join(REPO_ROOT, 'test/fixtures/eventlog/rhel8-uefi.bin')),
    ]
    const quoted = pcrsAfter(BOOT)
    const rnd = seededRandom(0x32e7)
    const heapBefore = process.memoryUsage().heapUsed
    let parsed = 0
    for (let i = 0; i < INPUTS; i++) {
      // mutate a mutation now and then, so damage compounds past the header
      const valid = seeds[i % 2]!
      const input = i % 3 === 0 ? mutate(mutate(valid, rnd), rnd) : mutate(valid, rnd)
      try {
        const log = parseEventLog(input)
        for (const e of log.events) describeEvent(e.type, e.data)
        parsed++
      } catch (err: unknown) {
        expect(err, `input ${i}`).to.be.instanceOf(EventLogParseError)
        expect((err as Error).message, `input ${i}`).to.match(/^event log: event \d+ at byte \d+: /)
      }
      try {
        replayEventLog(input, TPM_ALG.SHA256, quoted)
      } catch (err: unknown) {
        expect(err, `input ${i}`).to.be.instanceOf(AttestationError)
      }
    }
    expect(parsed).to.be.greaterThan(0)
    expect(process.memoryUsage().heapUsed - heapBefore).to.be.lessThan(256 * 1024 * 1024)
  })

  it('bounds the event count and the event size', () => {
    const many = encodeEventLog(
      Array.from({ length: MAX_EVENTS + 1 }, () => ({ pcr: 1, type: 4, data: Buffer.alloc(0) })),
    )
    expect(() => parseEventLog(many)).to.throw(EventLogParseError, `event ${MAX_EVENTS + 1} at byte`)
    const big = encodeEventLog([{ pcr: 1, type: 4, data: Buffer.alloc(0) }])
    big.writeUInt32LE(0xfffffff0, big.length - 4)
    expect(() => parseEventLog(big)).to.throw(
      EventLogParseError,
      /event 1 at byte \d+: event size 4294967280 is more than/,
    )
  })

  it('refuses a SHA-1-only log and an unknown digest algorithm, naming where', () => {
    const log = encodeEventLog(BOOT)
    const sha1Only = Buffer.from(log)
    sha1Only.write('Spec ID Event02', 32, 'latin1')
    expect(() => parseEventLog(sha1Only)).to.throw(/event 0 at byte 0: not a crypto-agile log/)
    const badAlg = Buffer.from(log)
    const first = log.indexOf(Buffer.from([1, 0, 0, 0, 0x0b, 0]), 60) // digest count 1, then SHA-256
    badAlg.writeUInt16LE(0x0c, first + 4)
    expect(() => parseEventLog(badAlg)).to.throw(
      /event 1 at byte \d+: digest algorithm 0xc is not in the Spec ID header/,
    )
  })
})
