import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../../support/swtpm.js'
import { makeTempDir, type TempDir } from '../../support/temp.js'
import { AttestationError, createIssuer, createValidator } from '../../../src/lib/attestation/index.js'
import { EVENT_TYPES as T } from '../../../src/lib/attestation/eventlog/describe.js'
import { parseEventLog } from '../../../src/lib/attestation/eventlog/parse.js'
import {
  encodeEventLog,
  measureBoot,
  pcrsAfter,
  type BootMeasurement,
} from '../../../src/lib/attestation/eventlog/write.js'
import { pcrEvent } from '../../../src/lib/tpm/commands.js'
import { readPcrs, withTpm } from '../../../src/lib/tpm/index.js'
import { BOOT } from './boot-log.js'

const ALL = Array.from({ length: 24 }, (_, i) => i)

describe('event log replay against swtpm', function () {
  let tpm: SwtpmHandle
  let tmp: TempDir
  let logFile: string
  const nonce = randomBytes(32)
  const userData = randomBytes(32)

  beforeEach(async () => {
    tpm = await startSwtpm()
    tmp = await makeTempDir()
    logFile = path.join(tmp.dir, 'binary_bios_measurements')
    await writeFile(logFile, await measureBoot(tpm.open, BOOT))
  })
  afterEach(async () => {
    await tpm.stop()
    await tmp.cleanup()
  })

  /** Issues with the log file as it is now and validates without measurements. */
  async function attest() {
    const doc = await createIssuer('qemu-vtpm', tpm.open, { eventLogPath: logFile }).issue(userData, nonce)
    return createValidator('qemu-vtpm', new Map()).validate(doc, nonce)
  }
  const rewrite = (events: BootMeasurement[]) => writeFile(logFile, encodeEventLog(events))

  it('accepts a log that replays, and lists what was measured', async () => {
    const got = await attest()
    expect(got.eventLog?.bank).to.equal('SHA-256')
    expect(got.eventLog?.pcrs).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(got.eventLog?.events).to.have.length(BOOT.length)
    const described = (type: string) =>
      got.eventLog?.events.filter((e) => e.type === type).map((e) => e.description)
    expect(described('EV_EFI_VARIABLE_DRIVER_CONFIG')?.[0]).to.match(
      /^SecureBoot \(8be4df61-93ca-11d2-aa0d-00e098032b8c\)/,
    )
    expect(described('EV_SEPARATOR')).to.include('separator')
    expect(described('EV_IPL')).to.deep.equal(['kernel_cmdline: console=ttyS0', '/boot/vmlinuz'])
    expect(described('EV_EFI_BOOT_SERVICES_APPLICATION')?.[0]).to.equal(
      'image of 4096 bytes, device path hex:04040400',
    )
    expect(described('EV_EVENT_TAG')).to.deep.equal(['tag 0x8f3b22ed: initrd'])
  })

  it('the log this module writes replays to what the TPM holds (pcrsAfter = swtpm)', async () => {
    const want = pcrsAfter(BOOT)
    const have = await readPcrs(tpm.open, [...want.keys()])
    expect(have).to.deep.equal(want)
  })

  it('agrees with TPM2_PCR_Event, where the TPM itself hashes the data', async () => {
    const event: BootMeasurement = { pcr: 10, type: T.EV_IPL, data: Buffer.from('measured by the TPM') }
    await withTpm(tpm.open, (t) => pcrEvent(t, event.pcr, event.data))
    await rewrite([...BOOT, event])
    expect((await attest()).eventLog?.pcrs).to.include(10)
  })

  it('leaves PCRs without events to the measurements (PCR 15, extended at runtime)', async () => {
    await measureBoot(tpm.open, [{ pcr: 15, type: T.EV_IPL, data: Buffer.from('node lock') }]) // not in the log
    const got = await attest()
    expect(got.eventLog?.pcrs).to.not.include(15)
  })

  it('reports no replay when the node has no log', async () => {
    const doc = await createIssuer('qemu-vtpm', tpm.open, {
      eventLogPath: path.join(tmp.dir, 'absent'),
    }).issue(userData, nonce)
    expect((await createValidator('qemu-vtpm', new Map()).validate(doc, nonce)).eventLog).to.equal(undefined)
  })

  const refusals: Record<string, { edit: (events: BootMeasurement[]) => BootMeasurement[]; pcr: number }> = {
    'a corrupted digest': {
      edit: (e) => e.map((m, i) => (i === 13 ? { ...m, digest: Buffer.alloc(32, 0xaa) } : m)),
      pcr: 4,
    },
    'a dropped event': { edit: (e) => e.filter((m) => m.type !== T.EV_EFI_VARIABLE_DRIVER_CONFIG), pcr: 7 },
    'two events of one PCR in swapped order': {
      edit: (e) => {
        const out = [...e]
        const [a, b] = [12, 13] // the two boot applications on PCR 4
        ;[out[a], out[b]] = [out[b]!, out[a]!]
        return out
      },
      pcr: 4,
    },
    'an event the TPM never saw': {
      edit: (e) => [...e, { pcr: 8, type: T.EV_IPL, data: Buffer.from('rootkit') }],
      pcr: 8,
    },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses ${name}, naming PCR ${tc.pcr} and both values`, async () => {
      await rewrite(tc.edit(BOOT))
      const quoted = (await readPcrs(tpm.open, ALL)).get(tc.pcr)?.toString('hex') ?? ''
      const err = await attest().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).to.be.instanceOf(AttestationError)
      expect((err as Error).message).to.match(
        new RegExp(`does not reproduce the quoted PCR ${tc.pcr}: replayed [0-9a-f]{64}, quoted ${quoted}$`),
      )
    })

  it('replays the same when events of different PCRs swap places (order only matters within a PCR)', async () => {
    const out = [...BOOT]
    ;[out[2], out[3]] = [out[3]!, out[2]!] // PCR 7 and PCR 1
    await rewrite(out)
    expect((await attest()).eventLog?.pcrs).to.include.members([1, 7])
  })

  it('refuses a malformed log, naming the event and byte offset', async () => {
    const raw = await readFile(logFile)
    await writeFile(logFile, raw.subarray(0, raw.length - 3))
    await expect(attest()).to.be.rejectedWith(
      AttestationError,
      /malformed event log: event 18 at byte \d+: event data: needs/,
    )
    expect(parseEventLog(raw).events).to.have.length(BOOT.length)
  })
})
