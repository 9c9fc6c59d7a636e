import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect } from '../../support/chai.js'
import { REPO_ROOT } from '../../support/cli.js'
import { parseEventLog } from '../../../src/lib/attestation/eventlog/parse.js'
import { replayEventLog } from '../../../src/lib/attestation/eventlog/replay.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import { TPM_ALG } from '../../../src/lib/tpm/index.js'

const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/eventlog/rhel8-uefi.bin')
const run = promisify(execFile)

/** The machine's SHA-256 PCRs, as go-tpm-tools' tests list them (see the fixture's README). */
const RHEL8_SHA256 = new Map(
  Object.entries({
    0: '24af52a4f429b71a3184a6d64cddad17e54ea030e2aa6576bf3a5a3d8bd3328f',
    1: '454220afaa80c83c3839f6cccd8b3c88bf4f562316a9dda1121c578c9e005a53',
    2: '3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969',
    3: '3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969',
    4: '758a3d35f1b0ff5b135dacd07db0c8132c0ac665d944090d4bf96e66447a245c',
    5: '53d0ee36163219201e686167bbb71ec505b3ba2917b9d9183ed84aad26cfeb89',
    6: '3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969',
    7: '5fd54361d580eb7592adb8deb236ff35444ceeac7148f24b3de63c041f12b3da',
    8: '25c3874041ebd4e9a21b6ed71b624a7bfa99907a8dcea7f129a4c64cbaf5829a',
    9: 'd43b2f61eb18b4791812ff5f20ab20e4ef621ba683370bedf5dbdf518b3a8078',
    14: 'd8f57ebcc1a23cc46832696e1a657f720e1be8f5b405bb7204682114e363b455',
  }).map(([i, v]) => [Number(i), Buffer.from(v, 'hex')]),
)

/** tpm2_eventlog's replay of one bank. */
async function tpm2ToolsBank(bank: string): Promise<Map<number, Buffer>> {
  const { stdout } = await run('tpm2_eventlog', [FIXTURE], { maxBuffer: 16 << 20 })
  const pcrs = stdout.slice(stdout.indexOf('\npcrs:'))
  const section = pcrs.slice(pcrs.indexOf(`${bank}:`)).split(/\n {2}\w+:\n/)[0] ?? ''
  return new Map(
    [...section.matchAll(/^\s+(\d+)\s*: 0x([0-9a-f]+)$/gm)].map((m) => [
      Number(m[1]),
      Buffer.from(m[2] ?? '', 'hex'),
    ]),
  )
}

describe('a real firmware event log (RHEL 8 on GCE, from go-tpm-tools)', function () {
  let raw: Buffer
  before(async () => (raw = await readFile(FIXTURE)))

  it('parses every event, with the three banks its header announces', () => {
    const log = parseEventLog(raw)
    expect([...log.algorithms]).to.deep.equal([
      [TPM_ALG.SHA1, 20],
      [TPM_ALG.SHA256, 32],
      [TPM_ALG.SHA384, 48],
    ])
    expect(log.events.length).to.be.greaterThan(50)
  })

  it('replays to the machine PCRs go-tpm-tools lists, and decodes what the firmware measured', () => {
    const replay = replayEventLog(raw, TPM_ALG.SHA256, RHEL8_SHA256)
    expect(replay.pcrs).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14])
    const variables = replay.events
      .filter((e) => e.type === 'EV_EFI_VARIABLE_DRIVER_CONFIG')
      .map((e) => e.description.split(' ')[0])
    expect(variables).to.include.members(['SecureBoot', 'PK', 'KEK', 'db', 'dbx'])
    expect(replay.events.filter((e) => e.type === 'EV_SEPARATOR').map((e) => e.description)).to.include(
      'separator',
    )
    expect(replay.events.some((e) => e.type === 'EV_IPL' && e.description.startsWith('grub_cmd'))).to.equal(
      true,
    )
    const apps = replay.events.filter((e) => e.type === 'EV_EFI_BOOT_SERVICES_APPLICATION')
    expect(apps[0]?.description).to.match(/^image of \d+ bytes, device path hex:[0-9a-f]+/)
  })

  for (const [bank, alg] of [
    ['sha1', TPM_ALG.SHA1],
    ['sha384', TPM_ALG.SHA384],
  ] as const)
    it(`replays the ${bank} bank as tpm2_eventlog does`, async () => {
      const want = await tpm2ToolsBank(bank)
      expect(want.size).to.equal(11)
      expect(replayEventLog(raw, alg, want).pcrs).to.deep.equal([...want.keys()])
    })

  it('refuses it against a machine whose PCR 4 differs, naming PCR 4', () => {
    const other = new Map(RHEL8_SHA256).set(4, Buffer.alloc(32, 1))
    expect(() => replayEventLog(raw, TPM_ALG.SHA256, other)).to.throw(
      AttestationError,
      `event log does not reproduce the quoted PCR 4: replayed ${RHEL8_SHA256.get(4)?.toString('hex')}, quoted ${'01'.repeat(32)}`,
    )
  })
})
