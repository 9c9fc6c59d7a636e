import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { withTempDir } from '../support/temp.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { createIssuer, type Issuer } from '../../src/lib/attestation/index.js'
import { parseCertificate } from '../../src/lib/x509/index.js'
import { runProcess } from '../../src/lib/system/process.js'
import { CERT_VALIDITY_SLACK_MS, createAttestedCertificate } from '../../src/lib/atls/certificate.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'

async function openssl(args: string[], input?: Buffer): Promise<string> {
  const res = await runProcess('openssl', args, { input })
  if (res.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${res.stderr}`)
  return res.stdout
}

/** Wraps the real issuer and keeps the documents it issued. */
function recordingIssuer(real: Issuer, issued: Buffer[]): Issuer {
  return { ...real, issue: async (u, n) => issued[issued.push(await real.issue(u, n)) - 1]! }
}

describe('attested certificates as X.509 (asn1-x509 encoding, node:crypto keys and signatures)', function () {
  let tpm: SwtpmHandle
  beforeEach(async () => (tpm = await startSwtpm()))
  afterEach(() => tpm.stop())

  it('node:crypto and openssl read the same subject, validity, key, serial and signature', async () => {
    const now = new Date('2026-03-01T12:00:00.000Z')
    const cert = await createAttestedCertificate(
      createIssuer('qemu-vtpm', tpm.open),
      Buffer.alloc(32, 7),
      now,
    )
    const ours = new X509Certificate(cert.der)
    const text = await openssl(['x509', '-noout', '-text'], Buffer.from(cert.certPem))
    expect(ours.subject).to.equal('CN=Constellation')
    expect(ours.issuer).to.equal('CN=Constellation')
    expect(text)
      .to.match(/Subject: CN ?= ?Constellation/)
      .and.match(/Issuer: CN ?= ?Constellation/)
    expect(text).to.match(/Version: 3 \(0x2\)/)
    expect(text).to.match(/Signature Algorithm: ecdsa-with-SHA256/)
    expect(text).to.match(/ASN1 OID: prime256v1/)
    expect(text).to.include(`Not Before: ${ours.validFrom}`).and.include(`Not After : ${ours.validTo}`)
    expect(new Date(ours.validFrom).getTime()).to.equal(now.getTime() - CERT_VALIDITY_SLACK_MS)
    expect(new Date(ours.validTo).getTime()).to.equal(now.getTime() + CERT_VALIDITY_SLACK_MS)
    const serial = /Serial Number:\s*\n?\s*([0-9a-f:]+)/.exec(text)?.[1]?.replaceAll(':', '')
    expect(serial?.toUpperCase()).to.equal(ours.serialNumber)
    expect(ours.verify(ours.publicKey), 'self-signature').to.be.true
    expect(ours.publicKey.asymmetricKeyDetails?.namedCurve).to.equal('prime256v1')
    expect(new X509Certificate(cert.certPem).raw.equals(cert.der), 'PEM and DER are one certificate').to.be
      .true
  })

  it('the attestation extension round-trips: openssl finds the issued document under the variant OID', async () => {
    const issued: Buffer[] = []
    const issuer = recordingIssuer(createIssuer('qemu-vtpm', tpm.open), issued)
    const cert = await createAttestedCertificate(issuer, Buffer.alloc(32, 9))
    expect(issued).to.have.length(1)
    await withTempDir(async (dir) => {
      const file = path.join(dir, 'cert.der')
      await writeFile(file, cert.der)
      const dump = await openssl(['asn1parse', '-inform', 'DER', '-in', file])
      const lines = dump.split('\n')
      const at = lines.findIndex((l) => l.includes(`OBJECT            :${issuer.oid}`))
      expect(at, `extension ${issuer.oid} in:\n${dump}`).to.be.greaterThan(-1)
      // openssl locates the extnValue OCTET STRING (offset, header and content length); its content is the document
      const located = /^\s*(\d+):d=\d+\s+hl=(\d+)\s+l=\s*(\d+) prim: OCTET STRING/.exec(lines[at + 1] ?? '')
      expect(
        located,
        `OCTET STRING right after the OID (not critical: no BOOLEAN) in:\n${dump}`,
      ).to.not.equal(null)
      const [offset, header, length] = located!.slice(1).map(Number) as [number, number, number]
      const value = cert.der.subarray(offset + header, offset + header + length)
      expect(value.equals(issued[0]!), 'extnValue content equals the issued document').to.be.true
    })
    const ext = parseCertificate(cert.der).tbsCertificate.extensions?.find((e) => e.extnID === issuer.oid)
    expect(Buffer.from(ext!.extnValue.buffer).equals(issued[0]!)).to.be.true
    expect(ext!.critical).to.be.false
  })

  it('a join certificate names the nonce as its subject CN, read back by node:crypto and openssl', async () => {
    const nonce = Buffer.alloc(32, 0xfb) // base64 with "+" and "/"
    const cn = encodeNonce(nonce)
    const cert = await createAttestedCertificate(createIssuer('qemu-vtpm', tpm.open), nonce, new Date(), cn)
    expect(new X509Certificate(cert.der).toLegacyObject().subject.CN).to.equal(cn)
    const subject = await openssl(
      ['x509', '-noout', '-subject', '-nameopt', 'RFC2253'],
      Buffer.from(cert.certPem),
    )
    expect(subject.trim()).to.equal(`subject=CN=${cn.replaceAll('+', '\\+')}`)
  })
})
