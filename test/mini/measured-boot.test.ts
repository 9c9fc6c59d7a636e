import { writeFile, mkdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { replayEventLog } from '../../src/lib/attestation/eventlog/replay.js'
import {
  bootPcrs,
  launcherScript,
  measureNodeBoot,
  type MachineBoot,
} from '../../src/lib/mini/measured-boot.js'
import { readPcrs, TPM_ALG } from '../../src/lib/tpm/index.js'

const BOOT_PCRS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
const CLI = ['/usr/bin/node', '/opt/constellation/bin/run.js']

describe("mini's measured boot against swtpm", function () {
  let tpm: SwtpmHandle
  let tmp: TempDir
  let boot: MachineBoot
  beforeEach(async () => {
    tpm = await startSwtpm()
    tmp = await makeTempDir()
    const units = path.join(tmp.dir, 'units')
    await mkdir(units)
    await writeFile(path.join(units, 'a.service'), '[Service]\nExecStart=/usr/bin/constellation a\n')
    await writeFile(path.join(units, 'b.service'), '[Service]\nExecStart=/usr/bin/constellation b\n')
    await writeFile(path.join(tmp.dir, 'constellation'), launcherScript(CLI))
    boot = {
      launcher: path.join(tmp.dir, 'constellation'),
      unitTemplates: units,
      eventLog: path.join(tmp.dir, 'root/sys/kernel/security/tpm0/binary_bios_measurements'),
    }
  })
  afterEach(async () => {
    await tpm.stop()
    await tmp.cleanup()
  })

  it('extends what the config expects, and writes a log that replays to it', async () => {
    await measureNodeBoot(tpm.open, boot)
    const expected = await bootPcrs(CLI, boot.unitTemplates)
    const quoted = await readPcrs(tpm.open, BOOT_PCRS)
    expect(quoted).to.deep.equal(expected)
    expect(replayEventLog(await readFile(boot.eventLog), TPM_ALG.SHA256, quoted).pcrs).to.deep.equal(
      BOOT_PCRS,
    )
  })

  it('measures again after a reboot (PCRs reset): the same values, a fresh log', async () => {
    await measureNodeBoot(tpm.open, boot)
    const first = await readPcrs(tpm.open, BOOT_PCRS)
    await tpm.restart()
    const firstLog = await readFile(boot.eventLog)
    await measureNodeBoot(tpm.open, boot)
    expect(await readPcrs(tpm.open, BOOT_PCRS)).to.deep.equal(first)
    expect(await readFile(boot.eventLog)).to.deep.equal(firstLog) // rewritten, not appended to
  })

  it('another launcher or unit set gives other PCR 4 and 9 values', async () => {
    const base = await bootPcrs(CLI, boot.unitTemplates)
    const otherCli = await bootPcrs([...CLI, '--evil'], boot.unitTemplates)
    expect(otherCli.get(4)).to.not.deep.equal(base.get(4))
    expect(otherCli.get(9)).to.deep.equal(base.get(9))
    await writeFile(path.join(boot.unitTemplates, 'c.service'), '[Service]\n')
    const otherUnits = await bootPcrs(CLI, boot.unitTemplates)
    expect(otherUnits.get(9)).to.not.deep.equal(base.get(9))
    expect(otherUnits.get(4)).to.deep.equal(base.get(4))
  })
})
