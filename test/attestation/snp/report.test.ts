/** parseSnpReport and parseCertificateTable on recorded reports and on broken layouts. */
import { expect } from '../../support/chai.js'
import { AttestationError } from '../../../src/lib/attestation/index.js'
import {
  CERTIFICATE_GUIDS,
  encodeCertificateTable,
  parseCertificateTable,
  parseSnpReport,
} from '../../../src/lib/attestation/snp/index.js'
import { der, fixture, pems, refusal } from './helpers.js'

const malformed = (fn: () => unknown, message: RegExp) => {
  const err = refusal(fn)
  expect(err).to.be.instanceOf(AttestationError)
  expect(err.message).to.match(message)
}

describe('parseSnpReport', () => {
  const azure = fixture('attestation.bin').subarray(0, 1184)
  const aws = Buffer.from(fixture('aws-report.txt').toString(), 'base64')

  it("reads Azure's version 2 VCEK-signed report", () => {
    const r = parseSnpReport(azure)
    expect(r.version).to.equal(2)
    expect(r.policy).to.equal(0x3001fn)
    expect(r.policyBits).to.include({
      abiMinor: 0x1f,
      abiMajor: 0,
      smt: true,
      migrateMa: false,
      debug: false,
    })
    expect(r.signerInfo).to.deep.equal({ signingKey: 'VCEK', maskChipKey: false, authorKeyEn: false })
    expect(r.signatureAlgo).to.equal(1)
    expect(r.reportedTcb).to.include({ bootloader: 2, tee: 0, snp: 6, microcode: 93 })
    expect(r.reportedTcb.raw).to.equal(0x5d06000000000002n)
    expect(r.platformInfo).to.equal(1n)
    expect(r.cpuid).to.equal(undefined)
    expect(r.mitigationVectors).to.equal(undefined)
    expect(r.signedBytes.equals(azure.subarray(0, 0x2a0))).to.equal(true)
    expect(r.signature.r.length).to.equal(48)
    expect(r.signature.r.equals(Buffer.from(azure.subarray(0x2a0, 0x2d0)).reverse())).to.equal(true)
  })

  it("reads AWS's version 3 VLEK-signed report with its CPUID (Milan B1)", () => {
    const r = parseSnpReport(aws)
    expect(r.version).to.equal(3)
    expect(r.signerInfo.signingKey).to.equal('VLEK')
    expect(r.cpuid).to.deep.equal({ family: 0x19, model: 1, stepping: 1 })
    expect(r.reportedTcb).to.include({ bootloader: 4, tee: 0, snp: 24, microcode: 217 })
    expect(r.currentTcb.microcode).to.equal(220)
  })

  it('refuses a wrong size, naming it', () => {
    malformed(() => parseSnpReport(fixture('attestation.bin')), /size is 1204 bytes, expected 1184/)
    malformed(() => parseSnpReport(Buffer.alloc(0)), /size is 0 bytes/)
  })

  it('refuses unknown versions, naming the version and the field', () => {
    for (const v of [0, 1, 4, 6]) {
      const raw = Buffer.from(azure)
      raw.writeUInt32LE(v, 0)
      malformed(() => parseSnpReport(raw), new RegExp(`VERSION \\(offset 0x00\\) is ${v}; versions 2, 3, 5`))
    }
  })

  it('reads version 5 mitigation vectors', () => {
    const raw = Buffer.from(aws)
    raw.writeUInt32LE(5, 0)
    raw.writeBigUInt64LE(3n, 0x1f8)
    raw.writeBigUInt64LE(7n, 0x200)
    expect(parseSnpReport(raw).mitigationVectors).to.deep.equal({ launch: 3n, current: 7n })
    raw.writeUInt32LE(3, 0)
    malformed(() => parseSnpReport(raw), /reserved before version 5 \(offset 0x1f8\)/)
  })

  it('refuses nonzero reserved bytes, naming the offset', () => {
    const cases: [number, RegExp][] = [
      [0x4c, /reserved after SIGNER_INFO \(offset 0x4c\)/],
      [0x188, /reserved before CHIP_ID \(offset 0x188\)/],
      [0x1eb, /reserved after CURRENT_MAJOR \(offset 0x1eb\)/],
      [0x1ef, /reserved after COMMITTED_MAJOR \(offset 0x1ef\)/],
      [0x250, /reserved before SIGNATURE \(offset 0x250\)/],
      [0x318, /SIGNATURE\.S high bytes \(offset 0x318\)/],
      [0x49f, /reserved after SIGNATURE \(offset 0x49f\)/],
    ]
    for (const [offset, message] of cases) {
      const raw = Buffer.from(azure)
      raw[offset] = 0x01
      malformed(() => parseSnpReport(raw), message)
    }
    const v3 = Buffer.from(aws)
    v3[0x18b] = 1
    malformed(() => parseSnpReport(v3), /reserved before CHIP_ID \(offset 0x18b\)/)
  })

  it('refuses a policy without its must-be-one bit or with reserved high bits', () => {
    const raw = Buffer.from(azure)
    raw.writeBigUInt64LE(0x1001fn, 8)
    malformed(() => parseSnpReport(raw), /POLICY \(offset 0x08\) bit 17 .* must be one/)
    raw.writeBigUInt64LE(0x3001fn | (1n << 40n), 8)
    malformed(() => parseSnpReport(raw), /POLICY \(offset 0x08\) bits 63–26/)
  })

  it('refuses reserved SIGNER_INFO bits and SIGNING_KEY values', () => {
    const raw = Buffer.from(azure)
    raw.writeUInt32LE(1 << 5, 0x48)
    malformed(() => parseSnpReport(raw), /SIGNER_INFO \(offset 0x48\) bits 31–5/)
    raw.writeUInt32LE(3 << 2, 0x48)
    malformed(() => parseSnpReport(raw), /SIGNING_KEY \(offset 0x48, bits 4–2\) is 3/)
    raw.writeUInt32LE(7 << 2, 0x48)
    expect(parseSnpReport(raw).signerInfo.signingKey).to.equal('none')
  })
})

describe('parseCertificateTable', () => {
  const [ask, ark] = pems(fixture('certchain.pem')).map(der)
  const vcek = der(fixture('vcek.pem'))
  const table = encodeCertificateTable({ vcek, ask, ark })

  it('reads what encodeCertificateTable wrote, GUIDs in RFC 4122 byte order', () => {
    const certs = parseCertificateTable(table)
    expect(certs.vcek?.equals(vcek)).to.equal(true)
    expect(certs.ask?.equals(ask!)).to.equal(true)
    expect(certs.ark?.equals(ark!)).to.equal(true)
    expect(table.subarray(0, 16).toString('hex')).to.equal(CERTIFICATE_GUIDS.vcek.replaceAll('-', ''))
    expect(table.readUInt32LE(16)).to.equal(4 * 24)
  })

  it('reads an empty table (just the zero entry) and skips unknown GUIDs', () => {
    expect(parseCertificateTable(Buffer.alloc(24))).to.deep.equal({})
    const t = Buffer.from(table)
    t[0] = 0xff
    expect(parseCertificateTable(t).vcek).to.equal(undefined)
  })

  it('refuses a table with no zero entry', () => {
    malformed(
      () => parseCertificateTable(Buffer.alloc(10)),
      /entry 0 \(offset 0\) runs past the table's 10 bytes/,
    )
    malformed(
      () => parseCertificateTable(table.subarray(0, 3 * 24)),
      /entry 0 .* lie outside the table's 72 bytes/,
    )
    malformed(() => parseCertificateTable(Buffer.alloc(0)), /entry 0 \(offset 0\) runs past/)
  })

  it('refuses entries pointing outside the table or into the entry list', () => {
    const t = Buffer.from(table)
    t.writeUInt32LE(t.length, 16)
    malformed(() => parseCertificateTable(t), /entry 0 \(63da758d-.*\): bytes .* lie outside the table/)
    t.writeUInt32LE(10, 16)
    malformed(() => parseCertificateTable(t), /entry 0 .*offset 10 points into the entry list/)
    const z = Buffer.from(table)
    z.writeUInt32LE(0, 20)
    malformed(() => parseCertificateTable(z), /entry 0 .*length 0/)
  })

  it('refuses a duplicate certificate kind', () => {
    const t = Buffer.from(table)
    table.copy(t, 24, 0, 16) // the ASK entry now carries the VCEK GUID
    malformed(() => parseCertificateTable(t), /entry 1: a second VCEK/)
  })
})
