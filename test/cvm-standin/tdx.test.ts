import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { createTdxStandIn, loadTdxStandIn, saveTdxStandIn } from '../../src/lib/cvm-standin/index.js'
import {
  encodeTdReport,
  parseTdReport,
  parseTdxCollateral,
  parseTdxQuote,
  pckExtensionOf,
  verifyTdxQuote,
  type TdxPolicy,
} from '../../src/lib/attestation/tdx/index.js'
import { type TdxStandIn } from '../../src/lib/cvm-standin/tdx.js'

const REPORT_DATA = Buffer.alloc(64, 0x42)
const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/cvm/tdx')

const policyFor = (s: TdxStandIn): TdxPolicy => ({
  intelRoots: [new X509Certificate(s.rootPem)],
  reportData: REPORT_DATA,
  minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
  collateral: parseTdxCollateral(s.collateral()),
})

describe('TDX stand-in Intel (test double)', () => {
  let s: TdxStandIn
  let tmp: TempDir

  before(async () => {
    s = await createTdxStandIn({ fmspc: 'a1b2c3d4e5f6', pceSvn: 13, qeSvn: 7 })
  })
  beforeEach(async () => {
    tmp = await makeTempDir('tdx-standin-')
  })
  afterEach(async () => {
    await tmp.cleanup()
  })

  it('names its root a stand-in, never Intel', () => {
    const root = new X509Certificate(s.rootPem)
    expect(root.subject).to.match(/STAND-IN\\?, not Intel/) // node escapes the comma
    expect(root.ca).to.equal(true)
  })

  it('lays out quote v4 with its PCK chain, its FMSPC and SVNs, one attestation key for every quote', () => {
    const a = parseTdxQuote(s.quote({ reportData: REPORT_DATA }))
    const b = parseTdxQuote(s.quote({ reportData: Buffer.alloc(64) }))
    expect(a.header).to.include({ version: 4, attestationKeyType: 2, teeType: 0x81 })
    expect(a.attestationKey).to.deep.equal(b.attestationKey)
    expect(a.qeReport.isvSvn).to.equal(7)
    expect(a.pckChain).to.have.length(3)
    expect(pckExtensionOf(a.pckChain[0] as X509Certificate)).to.include({ fmspc: 'a1b2c3d4e5f6', pceSvn: 13 })
    expect(a.trailingBytes).to.equal(0)
  })

  it('issues quotes and collateral that verify under its root', () => {
    const v = verifyTdxQuote(s.quote({ reportData: REPORT_DATA }), policyFor(s))
    expect(v).to.include({
      tcbStatus: 'UpToDate',
      qeTcbStatus: 'UpToDate',
      rootIsIntels: false,
      fmspc: 'a1b2c3d4e5f6',
    })
  })

  it('turns a TD report into a quote of its fields (what IMDS /acc/tdquote does)', () => {
    const mrTd = Buffer.alloc(48, 9)
    const rtmr1 = Buffer.alloc(48, 1)
    const report = encodeTdReport({
      reportData: REPORT_DATA,
      mrTd,
      rtmrs: [Buffer.alloc(48), rtmr1, Buffer.alloc(48), Buffer.alloc(48)],
      teeTcbSvn: s.platform.teeTcbSvn,
    })
    const v = verifyTdxQuote(s.quoteFromTdReport(report), { ...policyFor(s), mrTd, rtmrs: { 1: rtmr1 } })
    expect(v.quote.body.reportData).to.deep.equal(REPORT_DATA)
  })

  it('quotes the TD report recorded on Azure, its fields unchanged', async () => {
    const recorded = readFileSync(path.join(FIXTURES, 'azure_hcl_td_report.bin'))
    const report = parseTdReport(recorded)
    // a stand-in of that platform's TCB (a TDX 1.5 module, TEE_TCB_SVN 02 01 06 …)
    const azure = await createTdxStandIn({ teeTcbSvn: report.teeTcbSvn })
    const v = verifyTdxQuote(azure.quoteFromTdReport(recorded), {
      ...policyFor(azure),
      reportData: report.reportData,
      mrTd: report.mrTd,
      xfam: report.xfam,
    })
    expect(v.tcbStatus).to.equal('UpToDate')
    expect(v.quote.body.mrSeam).to.deep.equal(report.mrSeam)
  })

  it('refuses to quote a TD report whose hashes do not match', () => {
    const report = encodeTdReport({ reportData: REPORT_DATA })
    report[600] = 1
    expect(() => s.quoteFromTdReport(report)).to.throw(/TEE_INFO_HASH/)
  })

  it('saves keys 0600 without overwriting, and loads a stand-in that quotes the same way', async () => {
    const dir = path.join(tmp.dir, 'tdx')
    await saveTdxStandIn(s, dir)
    for (const name of await readdir(dir))
      if (name.endsWith('.key.pem'))
        expect((await stat(path.join(dir, name))).mode & 0o777, name).to.equal(0o600)
    await expect(saveTdxStandIn(s, dir)).to.be.rejectedWith(/EEXIST/)
    const loaded = await loadTdxStandIn(dir)
    expect(loaded.rootPem).to.equal(s.rootPem)
    const q = loaded.quote({ reportData: REPORT_DATA })
    expect(parseTdxQuote(q).attestationKey).to.deep.equal(
      parseTdxQuote(s.quote({ reportData: REPORT_DATA })).attestationKey,
    )
    expect(verifyTdxQuote(q, policyFor(s)).tcbStatus).to.equal('UpToDate')
  })
})
