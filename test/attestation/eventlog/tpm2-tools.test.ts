import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect } from '../../support/chai.js'
import { withTempDir } from '../../support/temp.js'
import { encodeEventLog, pcrsAfter } from '../../../src/lib/attestation/eventlog/write.js'
import { BOOT } from './boot-log.js'

const run = promisify(execFile)

/** `tpm2_eventlog`'s replayed SHA-256 bank: the lines under `pcrs:` / `sha256:`. */
function replayedByTpm2Tools(yaml: string): Map<number, Buffer> {
  const bank = yaml.slice(yaml.indexOf('\npcrs:')).split('sha256:')[1] ?? ''
  const out = new Map<number, Buffer>()
  for (const m of bank.matchAll(/^\s+(\d+)\s*: 0x([0-9a-fA-F]{64})$/gm))
    out.set(Number(m[1]), Buffer.from(m[2] ?? '', 'hex'))
  return out
}

describe('event logs this module writes, read by tpm2-tools (tpm2_eventlog)', function () {
  it('parses them and replays them to the same PCR values', () =>
    withTempDir(async (dir) => {
      const file = path.join(dir, 'binary_bios_measurements')
      await writeFile(file, encodeEventLog(BOOT))
      const { stdout } = await run('tpm2_eventlog', [file])
      expect(replayedByTpm2Tools(stdout)).to.deep.equal(pcrsAfter(BOOT))
      expect(stdout).to.include('Signature: Spec ID Event03')
      expect(stdout.match(/^- EventNum: /gm)).to.have.length(BOOT.length + 1)
    }))
})
