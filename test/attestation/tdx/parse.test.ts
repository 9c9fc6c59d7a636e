import { expect } from '../../support/chai.js'
import { withTempDir } from '../../support/temp.js'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import {
  encodeTdReport,
  parseTdReport,
  parseTdxCollateral,
  parseTdxQuote,
  readTdxCollateral,
  TDX_COLLATERAL_FILES,
} from '../../../src/lib/attestation/tdx/index.js'
import { AT, AZURE_TD_REPORT, expectRefusal, flip, RECORDED_COLLATERAL, RECORDED_QUOTE } from './helpers.js'

const u16At = (raw: Buffer, offset: number, value: number) => {
  const out = Buffer.from(raw)
  out.writeUInt16LE(value, offset)
  return out
}
const u32At = (raw: Buffer, offset: number, value: number) => {
  const out = Buffer.from(raw)
  out.writeUInt32LE(value, offset)
  return out
}
/** The QE authentication data's size field sits after QE report and its signature. */
const AUTH_SIZE_AT = AT.qeReportSignature + 64
const INNER_TYPE_AT = AUTH_SIZE_AT + 2 + 32

describe('parseTdxQuote', () => {
  it('takes the recorded quote apart', () => {
    const q = parseTdxQuote(RECORDED_QUOTE)
    expect(q.header).to.include({ version: 4, attestationKeyType: 2, teeType: 0x81 })
    expect(q.header.qeVendorId.toString('hex')).to.equal('939a7233f79c4ca9940a0db3957f0607')
    expect(q.body.teeTcbSvn.toString('hex')).to.equal('03000400000000000000000000000000')
    expect(q.body.tdAttributes.toString('hex')).to.equal('0000004000000000')
    expect(q.body.xfam.toString('hex')).to.equal('e71a060000000000')
    expect(q.qeReport).to.include({ isvProdId: 2, isvSvn: 4, miscSelect: 0 })
    expect(q.qeAuthData.length).to.equal(32)
    expect(q.pckChain.map((c) => c.subject.match(/CN=([^\n]+)/)?.[1])).to.deep.equal([
      'Intel SGX PCK Certificate',
      'Intel SGX PCK Platform CA',
      'Intel SGX Root CA',
    ])
    expect(q.trailingBytes).to.equal(39)
  })

  const cases: Record<string, { raw: Buffer; message: RegExp }> = {
    'quote v3': { raw: u16At(RECORDED_QUOTE, 0, 3), message: /header\.version at offset 0 is 3, expected 4/ },
    'quote v5': { raw: u16At(RECORDED_QUOTE, 0, 5), message: /quote v5 .* not supported/ },
    'another attestation key type': {
      raw: u16At(RECORDED_QUOTE, 2, 3),
      message: /attestationKeyType at offset 2 is 3/,
    },
    'an SGX quote': {
      raw: u32At(RECORDED_QUOTE, 4, 0),
      message: /teeType at offset 4 is 0x0, expected 0x81/,
    },
    'a truncated body': {
      raw: RECORDED_QUOTE.subarray(0, 300),
      message: /TD quote body at offset 48 needs 584 bytes/,
    },
    'signature data longer than the quote': {
      raw: u32At(RECORDED_QUOTE, 632, 100_000),
      message: /signature data length at offset 632 is 100000, past the end/,
    },
    'certification data type 5 directly': {
      raw: u16At(RECORDED_QUOTE, AT.qeReport - 6, 5),
      message: /certification data type at offset 764 is 5, expected 6/,
    },
    'QE auth data past the end': {
      raw: u16At(RECORDED_QUOTE, AUTH_SIZE_AT, 0xffff),
      message: /QE authentication data at offset 1220 needs 65535 bytes/,
    },
    'inner certification data not a PCK chain': {
      raw: u16At(RECORDED_QUOTE, INNER_TYPE_AT, 3),
      message: /PCK certification data type at offset 1252 is 3, expected 5/,
    },
    'a PEM chain with a broken certificate': {
      raw: flip(RECORDED_QUOTE, INNER_TYPE_AT + 6 + 100, 0x20),
      message: /PCK certificate chain/,
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`refuses ${name}, naming field and offset`, () => {
      expectRefusal(() => parseTdxQuote(tc.raw), { message: tc.message })
    })
})

describe('parseTdReport and encodeTdReport', () => {
  it('reads the TD report recorded on Azure', () => {
    const r = parseTdReport(AZURE_TD_REPORT)
    expect(r.reportType).to.deep.equal({ type: 0x81, subtype: 0, version: 0 })
    expect(r.teeTcbSvn.toString('hex')).to.equal('02010600000000000000000000000000')
    expect(r.xfam.toString('hex')).to.equal('e718060000000000')
    expect(r.mrTd.toString('hex').slice(0, 16)).to.equal('024a32b070383331')
    expect(r.tdAttributes.toString('hex')).to.equal('0000000000000000')
  })

  it('round-trips every field through encodeTdReport', () => {
    const r = parseTdReport(AZURE_TD_REPORT)
    const again = encodeTdReport({ ...r, reportType: r.reportType })
    // the recorded report's reserved bytes are zero, as the encoder leaves them
    expect(again.equals(AZURE_TD_REPORT)).to.equal(true)
    expect(parseTdReport(again)).to.deep.equal(r)
  })

  const cases: Record<string, { raw: Buffer; message: RegExp }> = {
    'a short report': { raw: AZURE_TD_REPORT.subarray(0, 1000), message: /is 1000 bytes, expected 1024/ },
    'an SGX report type': {
      raw: flip(AZURE_TD_REPORT, 0, 0x81),
      message: /REPORTTYPE\.TYPE at offset 0 is 0x00/,
    },
    'a changed TEE_TCB_INFO': { raw: flip(AZURE_TD_REPORT, 270), message: /TEE_TCB_INFO_HASH at offset 32/ },
    'a changed MRTD': { raw: flip(AZURE_TD_REPORT, 530), message: /TEE_INFO_HASH at offset 80/ },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`refuses ${name}`, () => {
      expectRefusal(() => parseTdReport(tc.raw), { message: tc.message })
    })
})

describe('TDX collateral', () => {
  it('parses the PCS sample responses', () => {
    const c = parseTdxCollateral(RECORDED_COLLATERAL)
    expect(c.tcbInfo).to.include({ id: 'TDX', version: 3, fmspc: '50806f000000' })
    expect(c.tcbInfo.tcbLevels.map((l) => l.tcbStatus)).to.deep.equal(['UpToDate', 'OutOfDate'])
    expect(c.qeIdentity).to.include({ id: 'TD_QE', version: 2, isvProdId: 2 })
    expect(c.tcbInfoSigned.text.startsWith('{"id":"TDX"')).to.equal(true)
    expect(c.tcbInfoSigned.issuerChain).to.have.length(2)
  })

  it('reads the four files from a directory', async () => {
    await withTempDir(async (dir) => {
      const files = Object.entries(TDX_COLLATERAL_FILES) as [keyof typeof TDX_COLLATERAL_FILES, string][]
      for (const [key, name] of files) await writeFile(path.join(dir, name), RECORDED_COLLATERAL[key])
      expect(readTdxCollateral(dir).tcbInfo.fmspc).to.equal('50806f000000')
    })
  })

  it('refuses an oversized file and a missing one', async () => {
    await withTempDir(async (dir) => {
      await writeFile(path.join(dir, TDX_COLLATERAL_FILES.tcbInfo), ' '.repeat(300 * 1024))
      expect(() => readTdxCollateral(dir)).to.throw(/larger than/)
    })
  })

  const cases: Record<string, { patch: Partial<typeof RECORDED_COLLATERAL>; message: RegExp }> = {
    'not JSON': { patch: { tcbInfo: '{' }, message: /tcb-info\.json: body is not JSON/ },
    'no tcbInfo member': { patch: { tcbInfo: '{"signature":"00"}' }, message: /tcbInfo is missing/ },
    'a short signature': {
      patch: {
        qeIdentity: RECORDED_COLLATERAL.qeIdentity.replace(/"signature":"[0-9a-f]+"/, '"signature":"abcd"'),
      },
      message: /signature must be 64 bytes of hex/,
    },
    'a bad FMSPC': {
      patch: { tcbInfo: RECORDED_COLLATERAL.tcbInfo.replace('"fmspc":"50806f000000"', '"fmspc":"xyz"') },
      message: /tcbInfo\.fmspc must be 6 bytes of hex/,
    },
    'fifteen SGX components': {
      patch: {
        tcbInfo: RECORDED_COLLATERAL.tcbInfo.replace(
          '{"svn":5,"category":"BIOS","type":"Early Microcode Update"},',
          '',
        ),
      },
      message: /sgxtcbcomponents has 15 components/,
    },
    'a second tcbInfo member after the signed one (JSON.parse would read the second)': {
      patch: {
        tcbInfo: RECORDED_COLLATERAL.tcbInfo.replace(
          /}\s*$/,
          `,"tcbInfo":${JSON.stringify({ id: 'TDX', fmspc: 'ffffffffffff' })}}`,
        ),
      },
      message: /tcb-info\.json: body names a member twice/,
    },
    'an issuer chain with no certificate': {
      patch: { tcbInfoIssuerChain: 'nothing' },
      message: /holds 0 PEM certificates/,
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`refuses ${name}`, () => {
      expectRefusal(() => parseTdxCollateral({ ...RECORDED_COLLATERAL, ...tc.patch }), {
        message: tc.message,
      })
    })
})
