/** Azure's HCL report: recorded reports from Azure SNP and TDX VMs, broken layouts, the binding. */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { mutate, seededRandom } from '../../support/fuzz.js'
import { REPO_ROOT } from '../../support/cli.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import {
  checkHclBinding,
  encodeHclReport,
  hclAttestationKey,
  parseHclReport,
} from '../../../src/lib/attestation/azure/index.js'
import { EvidenceMismatchError } from '../../../src/lib/attestation/errors.js'

const fixture = (dir: string, name: string) =>
  readFileSync(path.join(REPO_ROOT, 'test/fixtures/cvm', dir, name))
const refusal = (fn: () => unknown): Error => {
  try {
    fn()
  } catch (err) {
    return err as Error
  }
  throw new Error('expected a refusal')
}
const malformed = (fn: () => unknown, message: RegExp) => {
  const err = refusal(fn)
  expect(err).to.be.instanceOf(AttestationError)
  expect(err.message).to.match(message)
}

describe('Azure HCL report', () => {
  const tdxHcl = fixture('azure', 'hclreport-tdx.bin')
  // attestation.bin is the HCL report from offset 32 up to the runtime data: the SNP report, then
  // the 20-byte IGVM request header; runtimedata.bin is the variable data that followed it
  const snpArea = fixture('snp', 'attestation.bin')
  const snpRuntime = fixture('snp', 'runtimedata.bin')

  it('reads the recorded TDX HCL report: TD report, runtime data, key and binding', () => {
    const h = parseHclReport(tdxHcl)
    expect(h.kind).to.equal('tdx')
    expect(h.hardwareReport.length).to.equal(1024)
    expect(h.runtimeData.length).to.equal(1200)
    expect(JSON.parse(h.runtimeData.toString()).keys[0].kid).to.equal('HCLAkPub')
    const key = hclAttestationKey(h.runtimeData)
    expect(key.asymmetricKeyType).to.equal('rsa')
    expect(key.asymmetricKeyDetails?.modulusLength).to.equal(2048)
    // a TD report's REPORTDATA is bytes 128–191 (REPORTMACSTRUCT)
    checkHclBinding(h.hardwareReport.subarray(128, 192), h.runtimeData)
  })

  it("encodes the SNP layout exactly as Azure's recorded header bytes (attestation.bin)", () => {
    const encoded = encodeHclReport({
      kind: 'snp',
      hardwareReport: snpArea.subarray(0, 1184),
      runtimeData: snpRuntime,
    })
    expect(encoded.subarray(32, 1236).equals(snpArea)).to.equal(true)
    const h = parseHclReport(encoded)
    expect(h.kind).to.equal('snp')
    expect(h.hardwareReport.equals(snpArea.subarray(0, 1184))).to.equal(true)
    expect(h.runtimeData.equals(snpRuntime)).to.equal(true)
  })

  it("binds the recorded Azure SNP report's REPORT_DATA to its runtime data, and reads the HCL AK", () => {
    checkHclBinding(snpArea.subarray(0x50, 0x90), snpRuntime)
    expect(hclAttestationKey(snpRuntime).asymmetricKeyType).to.equal('rsa')
  })

  it('refuses runtime data whose digest is not in REPORT_DATA, or a nonzero tail', () => {
    const other = Buffer.from(snpRuntime.toString().replace('"tpm-enabled":true', '"tpm-enabled":false'))
    const err = refusal(() => checkHclBinding(snpArea.subarray(0x50, 0x90), other))
    expect(err).to.be.instanceOf(EvidenceMismatchError)
    expect((err as EvidenceMismatchError).field).to.equal('REPORT_DATA[0:32]')
    expect((err as EvidenceMismatchError).expected).to.contain(
      createHash('sha256').update(other).digest('hex'),
    )
    const tail = Buffer.from(snpArea.subarray(0x50, 0x90))
    tail[40] = 1
    const err2 = refusal(() => checkHclBinding(tail, snpRuntime))
    expect((err2 as EvidenceMismatchError).field).to.equal('REPORT_DATA[32:64]')
  })

  it('refuses broken layouts, naming the field and offset', () => {
    malformed(() => parseHclReport(tdxHcl.subarray(0, 1000)), /1000 bytes, fewer than the 1236/)
    const bad = (offset: number, value: number) => {
      const b = Buffer.from(tdxHcl)
      b.writeUInt32LE(value, offset)
      return b
    }
    malformed(() => parseHclReport(bad(0, 0x41414141)), /signature \(offset 0\) is "AAAA"/)
    malformed(() => parseHclReport(bad(1224, 3)), /report type \(offset 1224\) is 3/)
    malformed(() => parseHclReport(bad(1228, 2)), /hash type \(offset 1228\) is 2/)
    malformed(() => parseHclReport(bad(1232, 5000)), /runtime data size \(offset 1232\) is 5000/)
    malformed(() => parseHclReport(bad(1216, 7)), /request data size \(offset 1216\) is 7, expected 1220/)
    malformed(() => parseHclReport(bad(8, 9)), /report size \(offset 8\) is 9, expected 2436/)
    malformed(() => parseHclReport(bad(32 + 1024, 1)), /bytes 1056–1216 after the TD report must be zero/)
  })

  it('refuses runtime data without exactly one usable HCLAkPub', () => {
    malformed(() => hclAttestationKey(Buffer.from('nope')), /is not JSON/)
    malformed(() => hclAttestationKey(Buffer.from('{"keys":{}}')), /keys must be a list/)
    malformed(
      () => hclAttestationKey(Buffer.from('{"keys":[{"kid":"other"}]}')),
      /exactly one key with kid "HCLAkPub", found 0/,
    )
    malformed(
      () => hclAttestationKey(Buffer.from('{"keys":[{"kid":"HCLAkPub","kty":"EC"}]}')),
      /must be an RSA JWK/,
    )
    malformed(
      () => hclAttestationKey(Buffer.from('{"keys":[{"kid":"HCLAkPub","kty":"RSA","n":"!!","e":"AQAB"}]}')),
      /must be unpadded base64url/,
    )
    malformed(
      () => hclAttestationKey(Buffer.from('{"keys":[{"kid":"HCLAkPub","kty":"RSA","n":"AQAB","e":"AQAB"}]}')),
      /is a 17-bit RSA key; expected at least 2048/,
    )
  })

  it('parseHclReport and hclAttestationKey: 10,000 mutated inputs each fail only with AttestationError', function () {
    this.timeout(30_000)
    const rnd = seededRandom(0x4c1a)
    const snpHcl = encodeHclReport({
      kind: 'snp',
      hardwareReport: snpArea.subarray(0, 1184),
      runtimeData: snpRuntime,
    })
    // the fixed part (header, IGVM request header) is where layout bugs live: mutate it most
    const focus = (b: Buffer) => {
      const out = Buffer.from(b)
      const at = rnd() < 0.5 ? Math.floor(rnd() * 32) : 1216 + Math.floor(rnd() * 20)
      out[at] = Math.floor(rnd() * 256)
      return out
    }
    for (let i = 0; i < 10_000; i++) {
      const seed = i % 2 ? tdxHcl : snpHcl
      const input = rnd() < 0.6 ? focus(seed) : mutate(seed, rnd)
      for (const run of [() => parseHclReport(input), () => hclAttestationKey(mutate(snpRuntime, rnd))]) {
        try {
          run()
        } catch (err) {
          if (!(err instanceof AttestationError))
            throw new Error(`iteration ${i}: ${String(err)}`, { cause: err })
        }
      }
    }
  })
})
