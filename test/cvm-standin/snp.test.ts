/** The SEV-SNP stand-in: its chain looks like AMD's, its reports verify, it saves and loads. */
import { readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { verify, X509Certificate } from 'node:crypto'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { parseCertificate } from '../../src/lib/x509/index.js'
import {
  parseCertificateTable,
  parseSnpReport,
  readAmdExtensions,
  verifySnpEvidence,
} from '../../src/lib/attestation/snp/index.js'
import { createSnpStandIn, loadSnpStandIn, saveSnpStandIn } from '../../src/lib/cvm-standin/index.js'
import { type SnpStandIn } from '../../src/lib/cvm-standin/snp.js'

const RSASSA_PSS = '1.2.840.113549.1.1.10'
const run = promisify(execFile)

describe('SEV-SNP stand-in', function () {
  this.timeout(60_000)
  let vcek: SnpStandIn
  let vlek: SnpStandIn
  let tmp: TempDir

  before(async () => {
    ;[vcek, vlek] = await Promise.all([
      createSnpStandIn(),
      createSnpStandIn({ signer: 'VLEK', tcb: { bootloader: 4, tee: 0, snp: 24, microcode: 217 } }),
    ])
  })
  beforeEach(async () => {
    tmp = await makeTempDir('constell-snp-standin-')
  })
  afterEach(() => tmp.cleanup())

  it('names every certificate a stand-in and signs ARK and ASK with RSA-PSS like AMD', () => {
    for (const pem of [vcek.ark, vcek.ask, vcek.signerCert, vlek.ask, vlek.signerCert]) {
      expect(new X509Certificate(pem).subject).to.match(/STAND-IN\\?, not AMD/)
      expect(parseCertificate(pem).signatureAlgorithm.algorithm).to.equal(RSASSA_PSS)
    }
    expect(new X509Certificate(vcek.ark).subject).to.contain('CN=ARK-Milan')
    expect(new X509Certificate(vlek.ask).subject).to.contain('CN=SEV-VLEK-Milan')
    const key = new X509Certificate(vcek.signerCert).publicKey
    expect(key.asymmetricKeyDetails?.namedCurve).to.equal('secp384r1')
  })

  it("gives the VCEK AMD's extensions (TCB, hwID = CHIP_ID, productName) and the VLEK a cspId", () => {
    const v = readAmdExtensions(Buffer.from(new X509Certificate(vcek.signerCert).raw), 'VCEK')
    expect(v.tcb).to.deep.equal({ bootloader: 3, tee: 0, snp: 20, microcode: 209 })
    expect(v.hwId?.equals(vcek.chipId)).to.equal(true)
    expect(v.productName).to.equal('Milan-B0')
    const l = readAmdExtensions(Buffer.from(new X509Certificate(vlek.signerCert).raw), 'VLEK')
    expect(l.tcb).to.deep.equal({ bootloader: 4, tee: 0, snp: 24, microcode: 217 })
    expect(l.hwId).to.equal(undefined)
    expect(l.cspId).to.match(/STAND-IN/)
  })

  it('lays out the report as hardware does: r and s little-endian in 72-byte fields', () => {
    const reportData = Buffer.alloc(64, 0xab)
    const raw = vcek.report({ reportData, version: 2 })
    expect(raw.length).to.equal(1184)
    const r = Buffer.from(raw.subarray(0x2a0, 0x2d0)).reverse()
    const s = Buffer.from(raw.subarray(0x2e8, 0x318)).reverse()
    const key = new X509Certificate(vcek.signerCert).publicKey
    expect(
      verify('sha384', raw.subarray(0, 0x2a0), { key, dsaEncoding: 'ieee-p1363' }, Buffer.concat([r, s])),
    ).to.equal(true)
    const parsed = parseSnpReport(raw)
    expect(parsed.version).to.equal(2)
    expect(parsed.reportData.equals(reportData)).to.equal(true)
    expect(parsed.policy).to.equal(0x20000n)
    expect(parsed.signerInfo.signingKey).to.equal('VCEK')
    expect(parseSnpReport(vlek.report({ reportData })).signerInfo.signingKey).to.equal('VLEK')
  })

  it('returns the certificate table SEV firmware would: signer, ASK/ASVK (ASK GUID), ARK', () => {
    const t = parseCertificateTable(vcek.certificateTable())
    expect(t.vcek?.equals(new X509Certificate(vcek.signerCert).raw)).to.equal(true)
    expect(t.ask?.equals(new X509Certificate(vcek.ask).raw)).to.equal(true)
    expect(t.ark?.equals(new X509Certificate(vcek.ark).raw)).to.equal(true)
    const l = parseCertificateTable(vlek.certificateTable())
    expect(l.vlek?.equals(new X509Certificate(vlek.signerCert).raw)).to.equal(true)
    expect(l.ask?.equals(new X509Certificate(vlek.ask).raw)).to.equal(true)
  })

  it('saves (key 0600, never overwritten) and loads a stand-in whose reports still verify', async () => {
    const dir = path.join(tmp.dir, 'snp')
    await saveSnpStandIn(vcek, dir)
    expect((await stat(path.join(dir, 'signer-key.pem'))).mode & 0o777).to.equal(0o600)
    await expect(saveSnpStandIn(vcek, dir)).to.be.rejectedWith(/EEXIST/)
    const loaded = await loadSnpStandIn(dir)
    expect(loaded.ark).to.equal(vcek.ark)
    expect(loaded.chipId.equals(vcek.chipId)).to.equal(true)
    expect(JSON.stringify(loaded)).not.to.match(/PRIVATE KEY/)
    const report = loaded.report({ reportData: Buffer.alloc(64, 1) })
    const t = parseCertificateTable(loaded.certificateTable())
    const v = verifySnpEvidence(
      { report, signer: t.vcek, chain: [t.ask!] },
      {
        arks: [new X509Certificate(vcek.ark)],
        minimumTcb: vcek.tcb,
        reportData: Buffer.alloc(64, 1),
        launchMeasurement: Buffer.alloc(48),
        allowMigrationAgent: false,
        allowSmt: false,
      },
    )
    expect(v.signer).to.equal('VCEK')
    expect(v.rootIsAmds).to.equal(false)
  })

  it("refuses to load a key that is not the signer certificate's", async () => {
    const a = path.join(tmp.dir, 'a')
    const b = path.join(tmp.dir, 'b')
    await saveSnpStandIn(vcek, a)
    await saveSnpStandIn(vlek, b)
    await writeFile(path.join(a, 'signer-key.pem'), await readFile(path.join(b, 'signer-key.pem')))
    await expect(loadSnpStandIn(a)).to.be.rejectedWith(/signer-key\.pem is not the key of .*signer\.pem/)
  })

  it('passes `openssl verify` (RSA-PSS chain) and openssl reads the AMD extensions as on a real VCEK', async () => {
    for (const s of [vcek, vlek]) {
      const dir = path.join(tmp.dir, s.signer)
      await saveSnpStandIn(s, dir)
      const { stdout } = await run('openssl', [
        'verify',
        '-CAfile',
        path.join(dir, 'ark.pem'),
        '-untrusted',
        path.join(dir, 'ask.pem'),
        path.join(dir, 'signer.pem'),
      ])
      expect(stdout).to.match(/signer\.pem: OK/)
      const text = (await run('openssl', ['x509', '-in', path.join(dir, 'signer.pem'), '-noout', '-text']))
        .stdout
      expect(text).to.match(
        /Signature Algorithm: rsassaPss[\s\S]*Hash Algorithm: sha384[\s\S]*Salt Length: 0x30/,
      )
      expect(text).to.contain('1.3.6.1.4.1.3704.1.3.8')
      expect(text).to.contain(s.signer === 'VCEK' ? '1.3.6.1.4.1.3704.1.4' : '1.3.6.1.4.1.3704.1.5')
    }
  })

  it('refuses report fields of the wrong size', () => {
    expect(() => vcek.report({ reportData: Buffer.alloc(32) })).to.throw(/reportData is 32 bytes/)
    expect(() => vcek.report({ reportData: Buffer.alloc(64), measurement: Buffer.alloc(32) })).to.throw(
      /measurement is 32 bytes/,
    )
  })
})
