/**
 * `constellation attestation check` as an operator runs it: the built CLI on files recorded on real
 * hardware. The CLI's clock cannot be injected, so every certificate used for exit 0 must be valid
 * today: the Azure VCEK until 2030-08-30, its ASK/ARK until 2045, and the TDX quote's PCK chain
 * until 2029-09-20 (leaf), 2033 (platform CA) and 2049 (Intel's root); the AWS VLEK expired on
 * 2025-12-10 and shows the refusal the real clock gives.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { REPO_ROOT, runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { createSnpStandIn } from '../../src/lib/cvm-standin/index.js'

const SNP = path.join(REPO_ROOT, 'test/fixtures/cvm/snp')
const TDX = path.join(REPO_ROOT, 'test/fixtures/cvm/tdx')

interface CheckJson {
  file: string
  kind: string
  trusted: boolean
  refusal: { message: string; field?: string; expected?: string; found?: string } | null
  root: { subject: string; vendor: boolean } | null
  fields: Record<string, unknown>
  warnings: string[]
  error?: { message: string; exitCode: number }
}

describe('constellation attestation check', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  const check = (...args: string[]) => runCli(['attestation', 'check', ...args], { cwd: dir })
  const azure = ['report.bin', '--certs', 'vcek.pem', '--certs', 'ask-ark.pem']

  before(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    // attestation.bin is the bare report followed by 20 bytes of Azure's header: an operator cuts it out
    const extract = await readFile(path.join(SNP, 'attestation.bin'))
    await writeFile(path.join(dir, 'report.bin'), extract.subarray(0, 1184))
    await writeFile(path.join(dir, 'hcl-extract.bin'), extract)
    const flipped = Buffer.from(extract.subarray(0, 1184))
    flipped[0x90] = (flipped[0x90] ?? 0) ^ 1
    await writeFile(path.join(dir, 'flipped.bin'), flipped)
    await writeFile(path.join(dir, 'vcek.pem'), await readFile(path.join(SNP, 'vcek.pem')))
    await writeFile(path.join(dir, 'ask-ark.pem'), await readFile(path.join(SNP, 'certchain.pem')))
    const aws = Buffer.from((await readFile(path.join(SNP, 'aws-report.txt'), 'utf8')).trim(), 'base64')
    await writeFile(path.join(dir, 'aws-report.bin'), aws)
    await writeFile(path.join(dir, 'vlek.pem'), await readFile(path.join(SNP, 'aws-vlek.pem')))
    await writeFile(path.join(dir, 'asvk-ark.pem'), await readFile(path.join(SNP, 'aws-certchain.pem')))
    await writeFile(path.join(dir, 'quote.dat'), await readFile(path.join(TDX, 'tdx_prod_quote_SPR_E4.dat')))
    const s = await createSnpStandIn()
    await writeFile(path.join(dir, 'standin-report.bin'), s.report({ reportData: Buffer.alloc(64, 1) }))
    await writeFile(path.join(dir, 'standin-certs.pem'), `${s.signerCert}${s.ask}`)
    await writeFile(path.join(dir, 'standin-ark.pem'), s.ark)
  })
  after(() => cleanup())

  it("exit 0: the recorded Azure SEV-SNP report chains to AMD's published root", async () => {
    const res = await check(...azure)
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.match(/^report\.bin: AMD SEV-SNP attestation report\n {2}version: 2\n/)
    expect(res.stdout).to.include('  signer: VCEK')
    expect(res.stdout).to.include('    smt: true')
    expect(res.stdout).to.include('Verdict: TRUSTED')
    expect(res.stdout).to.include("Hardware: the SEV-SNP report chains to AMD's published root")
  })

  it('exit 0 with --json: one object (kind, trusted, refusal, root, fields, warnings)', async () => {
    const res = await check(...azure, '--json')
    expect(res.code, res.stderr).to.equal(0)
    const out = JSON.parse(res.stdout) as CheckJson
    expect(out).to.include({ kind: 'snp', trusted: true, refusal: null })
    expect(out.root).to.deep.equal({
      subject: 'OU=Engineering, C=US, L=Santa Clara, ST=CA, O=Advanced Micro Devices, CN=ARK-Milan',
      vendor: true,
    })
    expect(out.fields).to.include({ signer: 'VCEK', product: 'Milan', version: 2 })
    expect(out.warnings).to.deep.equal([])
  })

  it("exit 0: go-tdx-guest's recorded TDX quote, no certificates needed", async () => {
    const res = await check('quote.dat', '--json')
    expect(res.code, res.stderr).to.equal(0)
    const out = JSON.parse(res.stdout) as CheckJson
    expect(out).to.include({ kind: 'tdx', trusted: true })
    expect(out.root?.vendor).to.equal(true)
    expect(out.fields).to.include({ fmspc: '50806f000000', tcbStatus: 'not evaluated' })
  })

  it('exit 4: a one-byte change prints the fields first, then the refusal (field, expected, found)', async () => {
    const res = await check('flipped.bin', '--certs', 'vcek.pem', '--certs', 'ask-ark.pem')
    expect(res.code).to.equal(4)
    expect(res.stdout).to.include('  measurement: ')
    expect(res.stdout).to.include('Verdict: NOT trusted')
    expect(res.stderr).to.match(
      /Error: flipped\.bin: the SEV-SNP report is NOT trusted: SEV-SNP report: SIGNATURE: expected .* found r=/,
    )

    const json = await check('flipped.bin', '--certs', 'vcek.pem', '--certs', 'ask-ark.pem', '--json')
    expect(json.code).to.equal(4)
    const out = JSON.parse(json.stdout) as CheckJson
    expect(out).to.include({ kind: 'snp', trusted: false, root: null })
    expect(out.refusal).to.include({ field: 'SIGNATURE' })
    expect(out.refusal?.expected).to.be.a('string')
    expect(out.refusal?.found).to.be.a('string')
    expect(out.error?.exitCode).to.equal(4)
  })

  it('exit 4: the AWS VLEK expired on 2025-12-10', async () => {
    const res = await check('aws-report.bin', '--certs', 'vlek.pem', '--certs', 'asvk-ark.pem', '--json')
    expect(res.code).to.equal(4)
    expect((JSON.parse(res.stdout) as CheckJson).refusal).to.include({ field: 'VLEK validity' })
  })

  it("exit 4: --report-data that is not the report's", async () => {
    const res = await check(...azure, '--report-data', 'ff')
    expect(res.code).to.equal(4)
    expect(res.stderr).to.match(/REPORT_DATA: expected ff0{126}, found 0ccc0895/)
  })

  it("a stand-in root is named as not the vendor's", async () => {
    const res = await check('standin-report.bin', '--certs', 'standin-certs.pem', '--root', 'standin-ark.pem')
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.include("chains to a STAND-IN root, not AMD's")
    const json = await check(
      'standin-report.bin',
      '--certs',
      'standin-certs.pem',
      '--root',
      'standin-ark.pem',
      '--json',
    )
    const out = JSON.parse(json.stdout) as CheckJson
    expect(out.root?.vendor).to.equal(false)
    expect(out.root?.subject).to.include('STAND-IN')

    const refused = await check('standin-report.bin', '--certs', 'standin-certs.pem')
    expect(refused.code).to.equal(4)
    expect(refused.stderr).to.match(/ASK issuer: expected one of the pinned ARKs/)
  })

  it('exit 2: unreadable input, each message naming the file', async () => {
    const cases: [string[], RegExp][] = [
      [['hcl-extract.bin'], /hcl-extract\.bin is 1204 bytes and starts like an SEV-SNP report/],
      [['missing.bin'], /reading missing\.bin: ENOENT/],
      [['vcek.pem'], /vcek\.pem is neither an SEV-SNP report .* nor a TDX quote/],
      [['.'], /\. is not a regular file/],
      [['quote.dat', '--certs', 'vcek.pem'], /quote\.dat is a TDX quote, which carries its own PCK/],
      [['report.bin'], /report\.bin is signed by a VCEK: give its certificate with --certs/],
    ]
    for (const [args, want] of cases) {
      const res = await check(...args)
      expect(res.code, `${args.join(' ')}: ${res.stderr}`).to.equal(2)
      expect(res.stderr).to.match(want)
    }
    const json = await check('hcl-extract.bin', '--json')
    expect(json.code).to.equal(2)
    expect((JSON.parse(json.stdout) as CheckJson).error?.exitCode).to.equal(2)
  })
})
