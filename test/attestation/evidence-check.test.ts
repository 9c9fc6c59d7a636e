/** checkEvidence (`attestation check`) on evidence recorded on real AMD and Intel hardware, and on stand-ins. */
import { createHash } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { ExitCode, CliError, UsageError } from '../../src/lib/errors/index.js'
import { checkEvidence, type EvidenceCheckInput } from '../../src/lib/attestation/evidence-check.js'
import { detectEvidenceKind, MAX_EVIDENCE_FILE_BYTES } from '../../src/lib/attestation/evidence-input.js'
import { renderEvidenceCheck } from '../../src/lib/attestation/evidence-check-render.js'
import { TDX_COLLATERAL_FILES } from '../../src/lib/attestation/tdx/index.js'
import { createSnpStandIn, createTdxStandIn } from '../../src/lib/cvm-standin/index.js'
import { fixture as snpFixture, flip } from './snp/helpers.js'
import { AT, fixture as tdxFixture, RECORDED_NOW as TDX_NOW } from './tdx/helpers.js'
import { SNP_STANDIN_DEFAULT_POLICY } from '../../src/lib/cvm-standin/snp.js'

/** Inside the Azure VCEK's validity (2023-08-30 to 2030-08-30) and the ASK/ARK's. */
const AZURE_NOW = new Date('2024-06-01T00:00:00Z')
/** Inside the AWS VLEK's validity (2024-12-10 to 2025-12-10). */
const AWS_NOW = new Date('2025-06-01T00:00:00Z')
const AZURE_REPORT = snpFixture('attestation.bin').subarray(0, 1184)
const AWS_REPORT = Buffer.from(snpFixture('aws-report.txt').toString(), 'base64')
const TDX_QUOTE = tdxFixture('tdx_prod_quote_SPR_E4.dat')
/** REPORT_DATA of the Azure report: SHA-256 of the HCL runtime data, then 32 zero bytes. */
const AZURE_REPORT_DATA = createHash('sha256').update(snpFixture('runtimedata.bin')).digest('hex')

describe('attestation check (checkEvidence)', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  const at = (name: string) => path.join(dir, name)
  const put = async (name: string, data: Buffer | string) => {
    await writeFile(at(name), data)
    return name
  }
  const check = (input: Omit<EvidenceCheckInput, 'cwd'>) => checkEvidence({ cwd: dir, ...input })
  const usage = (input: Omit<EvidenceCheckInput, 'cwd'>): UsageError => {
    try {
      check(input)
    } catch (err) {
      expect(err).to.be.instanceOf(UsageError)
      expect((err as UsageError).exitCode).to.equal(ExitCode.Usage)
      return err as UsageError
    }
    throw new Error('expected a usage error')
  }
  const refusedWith = (input: Omit<EvidenceCheckInput, 'cwd'>) => {
    const { check: c, error } = check(input)
    expect(c.trusted).to.equal(false)
    expect(error).to.be.instanceOf(CliError)
    expect(error?.exitCode).to.equal(ExitCode.AttestationFailed)
    expect(error?.message).to.include(input.file)
    expect(error?.data).to.deep.include({ kind: c.kind, trusted: false })
    return { c, error }
  }

  before(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    await put('report.bin', AZURE_REPORT)
    await put('vcek.pem', snpFixture('vcek.pem'))
    await put('vcek.cert', snpFixture('vcek.cert'))
    await put('ask-ark.pem', snpFixture('certchain.pem'))
    await put('aws-report.bin', AWS_REPORT)
    await put('aws-vlek.pem', snpFixture('aws-vlek.pem'))
    await put('aws-asvk-ark.pem', snpFixture('aws-certchain.pem'))
    await put('quote.dat', TDX_QUOTE)
    await mkdir(at('collateral'))
    await put(`collateral/${TDX_COLLATERAL_FILES.tcbInfo}`, tdxFixture('sample_tcbInfo_response'))
    await put(
      `collateral/${TDX_COLLATERAL_FILES.tcbInfoIssuerChain}`,
      tdxFixture('tcb_info_issuer_chain.pem'),
    )
    await put(`collateral/${TDX_COLLATERAL_FILES.qeIdentity}`, tdxFixture('sample_qeIdentity_response'))
    await put(
      `collateral/${TDX_COLLATERAL_FILES.qeIdentityIssuerChain}`,
      tdxFixture('qe_identity_issuer_chain.pem'),
    )
  })
  after(() => cleanup())

  const azure = { file: 'report.bin', certs: ['vcek.pem', 'ask-ark.pem'], now: () => AZURE_NOW }
  const aws = { file: 'aws-report.bin', certs: ['aws-vlek.pem', 'aws-asvk-ark.pem'], now: () => AWS_NOW }
  const tdx = { file: 'quote.dat', now: () => TDX_NOW }

  describe('accepts the recorded evidence against the vendors’ published roots', () => {
    it("Constellation's Azure SEV-SNP report with vcek.pem and the ASK/ARK", () => {
      const { check: c, error } = check(azure)
      expect(error).to.equal(undefined)
      expect(c).to.deep.include({ kind: 'snp', trusted: true, refusal: null, reportDataChecked: false })
      expect(c.root).to.deep.equal({
        subject: 'OU=Engineering, C=US, L=Santa Clara, ST=CA, O=Advanced Micro Devices, CN=ARK-Milan',
        vendor: true,
      })
      expect(c.fields).to.deep.include({ version: 2, signer: 'VCEK', product: 'Milan' })
      expect(c.fields.policy).to.deep.include({
        raw: '0x000000000003001f',
        debug: false,
        smt: true,
        migrateMa: false,
      })
      expect(c.fields.reportedTcb).to.deep.equal({
        bootloader: 2,
        tee: 0,
        snp: 6,
        microcode: 93,
        raw: '0x5d06000000000002',
      })
      expect(c.fields.reportData).to.equal(`${AZURE_REPORT_DATA}${'00'.repeat(32)}`)
      // the ARK in ask-ark.pem is AMD's, which is pinned: no warning that it was ignored
      expect(c.warnings).to.deep.equal([])
      const text = renderEvidenceCheck(c)
      expect(text).to.include('REPORT_DATA not checked')
      expect(text).to.include('launch measurement shown, not checked')
      expect(text).to.include("chains to AMD's published root")
    })

    it('the same with the VCEK as DER (AMD KDS) and REPORT_DATA given (32 bytes, zero padded)', () => {
      const { check: c } = check({
        ...azure,
        certs: ['vcek.cert', 'ask-ark.pem'],
        reportData: AZURE_REPORT_DATA,
      })
      expect(c).to.deep.include({ trusted: true, reportDataChecked: true })
      expect(renderEvidenceCheck(c)).to.include('REPORT_DATA matches --report-data')
    })

    it('the AWS VLEK-signed report (version 3) with its VLEK and ASVK/ARK', () => {
      const { check: c } = check(aws)
      expect(c).to.deep.include({ kind: 'snp', trusted: true })
      expect(c.fields).to.deep.include({ version: 3, signer: 'VLEK', product: 'Milan' })
      expect(c.fields.cpuid).to.deep.equal({ family: '0x19', model: '0x1', stepping: '0x1' })
      expect(c.root?.vendor).to.equal(true)
    })

    it("go-tdx-guest's TDX quote, which carries its PCK chain, inside the chain's validity", () => {
      const { check: c } = check(tdx)
      expect(c).to.deep.include({ kind: 'tdx', trusted: true, refusal: null })
      expect(c.root).to.deep.equal({
        subject: 'CN=Intel SGX Root CA, O=Intel Corporation, L=Santa Clara, ST=CA, C=US',
        vendor: true,
      })
      expect(c.fields).to.deep.include({
        version: 4,
        fmspc: '50806f000000',
        tcbStatus: 'not evaluated',
        teeTcbSvn: '03000400000000000000000000000000',
      })
      expect(c.fields.tdAttributes).to.deep.include({ debug: false })
      expect(c.warnings.join('\n')).to.match(/TCB status not evaluated/)
      expect(renderEvidenceCheck(c)).to.include("chains to Intel's published root")
    })
  })

  describe('refuses, naming the field, expected and found', () => {
    it('a one-byte change in the SEV-SNP signed body (the measurement)', () => {
      const file = 'report-flipped.bin'
      return put(file, flip(AZURE_REPORT, 0x90)).then(() => {
        const { c, error } = refusedWith({ ...azure, file })
        expect(c.refusal).to.include({ field: 'SIGNATURE' })
        expect(c.refusal?.expected).to.include('signature by the VCEK')
        expect(c.root).to.equal(null)
        expect(error?.data).to.deep.include({ refusal: c.refusal })
        // the parsed fields are there to print first
        expect(c.fields.measurement).to.be.a('string')
        expect(renderEvidenceCheck(c)).to.match(/Verdict: NOT trusted: .*SIGNATURE/)
      })
    })

    it('a one-byte change in the TDX quote body (MRTD)', async () => {
      const file = await put('quote-flipped.dat', flip(TDX_QUOTE, AT.mrTd))
      const { c } = refusedWith({ ...tdx, file })
      expect(c.refusal?.message).to.match(/signature over header and TD quote body does not verify/)
    })

    it("a swapped chain: the VCEK with the AWS ASVK/ARK, and with AMD's Genoa ASK/ARK", async () => {
      await put('genoa-ask-ark.pem', snpFixture('genoa-ask-ark.pem'))
      for (const chain of ['aws-asvk-ark.pem', 'genoa-ask-ark.pem']) {
        const { c } = refusedWith({ ...azure, certs: ['vcek.pem', chain] })
        expect(c.refusal?.message).to.match(/no ASK in the evidence issued the VCEK/)
      }
    })

    it('a wrong --report-data (SEV-SNP and TDX)', () => {
      const snp = refusedWith({ ...azure, reportData: 'ab'.repeat(64) }).c
      expect(snp.refusal).to.deep.include({ field: 'REPORT_DATA', expected: 'ab'.repeat(64) })
      const q = refusedWith({ ...tdx, reportData: '00' }).c
      expect(q.refusal).to.deep.include({ field: 'REPORTDATA', expected: '00'.repeat(64) })
    })

    it('an expired signer: the AWS VLEK (until 2025-12-10) checked on 2026-11-27', () => {
      const { c } = refusedWith({ ...aws, now: () => new Date('2026-11-27T12:00:00Z') })
      expect(c.refusal).to.deep.include({ field: 'VLEK validity' })
    })

    it('the recorded TDX quote with the recorded collateral, whose TCB levels are not this platform’s', () => {
      const { c } = refusedWith({ ...tdx, collateralDir: 'collateral' })
      expect(c.refusal).to.deep.include({ field: 'TCB level' })
    })
  })

  describe('stand-in roots are named as not the vendor’s', () => {
    let standInReport: string
    before(async () => {
      const s = await createSnpStandIn()
      await put('standin-ark.pem', s.ark)
      await put('standin-certs.pem', `${s.signerCert}${s.ask}`)
      standInReport = await put('standin-report.bin', s.report({ reportData: Buffer.alloc(64, 7) }))
      await put(
        'standin-debug.bin',
        s.report({ reportData: Buffer.alloc(64), policy: SNP_STANDIN_DEFAULT_POLICY | (1n << 19n) }),
      )
      await put(
        'standin-migrate.bin',
        s.report({ reportData: Buffer.alloc(64), policy: SNP_STANDIN_DEFAULT_POLICY | (1n << 18n) }),
      )
    })
    const standIn = () => ({ file: standInReport, certs: ['standin-certs.pem'] })

    it('a stand-in report with --root the stand-in ARK: trusted, and the root is NOT AMD’s', () => {
      const { check: c } = check({ ...standIn(), roots: ['standin-ark.pem'] })
      expect(c.trusted).to.equal(true)
      expect(c.root?.vendor).to.equal(false)
      expect(c.root?.subject).to.include('STAND-IN')
      expect(renderEvidenceCheck(c)).to.include('chains to a STAND-IN root, not AMD')
    })

    it("the recorded Azure report with a stand-in root where AMD's is needed: refused", () => {
      const { c } = refusedWith({ ...azure, roots: ['standin-ark.pem'] })
      expect(c.refusal).to.deep.include({ field: 'ASK issuer' })
      expect(c.pinnedRoots).to.have.length(1)
      expect(c.pinnedRoots[0]?.vendor).to.equal(false)
      expect(renderEvidenceCheck(c)).to.match(/Root: none established .* NOT the vendor/)
    })

    it("a stand-in report under AMD's published roots: refused", () => {
      const { c } = refusedWith(standIn())
      expect(c.refusal).to.deep.include({ field: 'ASK issuer' })
      expect(c.pinnedRoots.every((r) => r.vendor)).to.equal(true)
    })

    it('a debug guest is refused; a migration agent is allowed and shown', () => {
      const roots = ['standin-ark.pem']
      const debug = refusedWith({ ...standIn(), file: 'standin-debug.bin', roots }).c
      expect(debug.refusal).to.deep.include({ field: 'POLICY.DEBUG' })
      const { check: ma } = check({ ...standIn(), file: 'standin-migrate.bin', roots })
      expect(ma.trusted).to.equal(true)
      expect(ma.fields.policy).to.deep.include({ migrateMa: true })
      expect(ma.warnings.join()).to.match(/MIGRATE_MA/)
    })
  })

  describe('TDX TCB status from collateral: reported, not judged (stand-in Intel)', () => {
    before(async () => {
      const s = await createTdxStandIn()
      await put('tdx-standin-root.pem', s.rootPem)
      await put('tdx-standin-quote.dat', s.quote({ reportData: Buffer.alloc(64, 2) }))
      const debugAttributes = Buffer.alloc(8)
      debugAttributes[0] = 1
      await put(
        'tdx-standin-debug.dat',
        s.quote({ reportData: Buffer.alloc(64), tdAttributes: debugAttributes }),
      )
      for (const status of ['UpToDate', 'OutOfDate', 'Revoked']) {
        await mkdir(at(`tdx-${status}`))
        const files = s.collateral({ tcbStatus: status })
        for (const [k, name] of Object.entries(TDX_COLLATERAL_FILES))
          await put(`tdx-${status}/${name}`, files[k as keyof typeof files])
      }
    })
    const standIn = { file: 'tdx-standin-quote.dat', roots: ['tdx-standin-root.pem'] }

    it('UpToDate: trusted, the root named as a stand-in', () => {
      const { check: c } = check({ ...standIn, collateralDir: 'tdx-UpToDate' })
      expect(c).to.deep.include({ trusted: true })
      expect(c.fields).to.deep.include({ tcbStatus: 'UpToDate', qeTcbStatus: 'UpToDate' })
      expect(c.root?.vendor).to.equal(false)
      expect(renderEvidenceCheck(c)).to.include("chains to a STAND-IN root, not Intel's")
    })

    it('OutOfDate: trusted, with a warning that says so', () => {
      const { check: c } = check({ ...standIn, collateralDir: 'tdx-OutOfDate' })
      expect(c.trusted).to.equal(true)
      expect(c.fields.tcbStatus).to.equal('OutOfDate')
      expect(c.warnings.join()).to.match(/TCB status is OutOfDate \(reported, not judged\)/)
    })

    it('Revoked: refused', () => {
      const { c } = refusedWith({ ...standIn, collateralDir: 'tdx-Revoked' })
      expect(c.refusal).to.deep.include({ field: 'TCB status', found: 'Revoked' })
    })

    it('a debug TD: refused', () => {
      const { c } = refusedWith({ ...standIn, file: 'tdx-standin-debug.dat' })
      expect(c.refusal).to.deep.include({ field: 'TDATTRIBUTES.DEBUG' })
      expect(c.fields.tdAttributes).to.deep.include({ debug: true })
    })
  })

  describe('kind detection and unreadable input (exit 2, naming the file)', () => {
    it('detects SEV-SNP and TDX from the bytes', () => {
      expect(detectEvidenceKind(AZURE_REPORT, 'r')).to.equal('snp')
      expect(detectEvidenceKind(AWS_REPORT, 'r')).to.equal('snp')
      expect(detectEvidenceKind(TDX_QUOTE, 'q')).to.equal('tdx')
    })

    const cases: Record<string, { data?: Buffer; dir?: true; missing?: true; want: RegExp }> = {
      'a missing file': { missing: true, want: /reading .*: ENOENT/ },
      'a directory': { dir: true, want: /is not a regular file/ },
      'an empty file': { data: Buffer.alloc(0), want: /is empty/ },
      'more than 64 KiB': { data: Buffer.alloc(MAX_EVIDENCE_FILE_BYTES + 1), want: /more than 65536/ },
      'an Azure HCL extract (1204 bytes, a report plus a header)': {
        data: snpFixture('attestation.bin'),
        want: /1204 bytes and starts like an SEV-SNP report, which is exactly 1184/,
      },
      'a truncated SEV-SNP report': {
        data: AZURE_REPORT.subarray(0, 1000),
        want: /truncated SEV-SNP report: 1000 of 1184/,
      },
      'a truncated TDX quote': {
        data: TDX_QUOTE.subarray(0, 700),
        want: /not a readable TDX quote \(truncated or malformed\)/,
      },
      'a malformed SEV-SNP report (reserved byte set)': {
        data: flip(AZURE_REPORT, 0x4c),
        want: /not a readable SEV-SNP report .*reserved after SIGNER_INFO/,
      },
      'something else (a PEM file)': {
        data: snpFixture('vcek.pem'),
        want: /neither an SEV-SNP report .* nor a TDX quote/,
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const file = `unreadable-${name.replace(/\W+/g, '-')}`
        if (tc.dir) await mkdir(at(file))
        else if (tc.data) await put(file, tc.data)
        const err = usage({ file, certs: [] })
        expect(err.message).to.include(file)
        expect(err.message).to.match(tc.want)
      })

    it('flags that do not fit the evidence or are malformed', async () => {
      expect(usage({ ...tdx, certs: ['vcek.pem'] }).message).to.match(/TDX quote, which carries its own PCK/)
      expect(usage({ ...azure, collateralDir: 'collateral' }).message).to.match(/--collateral is Intel's/)
      expect(usage({ ...azure, reportData: 'xyz' }).message).to.match(/--report-data "xyz" is not hex/)
      expect(usage({ ...azure, reportData: 'ab'.repeat(65) }).message).to.match(/is not hex of 1 to 64 bytes/)
      expect(usage({ ...azure, roots: ['vcek.pem'] }).message).to.match(
        /--root vcek.pem: .*not a CA certificate/,
      )
      expect(usage({ ...azure, certs: ['ask-ark.pem'] }).message).to.match(
        /report.bin is signed by a VCEK: give its certificate/,
      )
      expect(usage({ ...azure, certs: ['vcek.pem', 'aws-vlek.pem', 'ask-ark.pem'] }).message).to.match(
        /2 signer \(non-CA\) certificates/,
      )
      expect(usage({ ...azure, certs: ['vcek.pem'] }).message).to.match(/whose ASK must come with --certs/)
      await put('not-a-cert.pem', 'hello')
      expect(usage({ ...azure, certs: ['not-a-cert.pem'] }).message).to.match(/--certs not-a-cert.pem: /)
      expect(usage({ ...tdx, collateralDir: 'no-such-dir' }).message).to.match(/--collateral no-such-dir: /)
    })
  })
})
