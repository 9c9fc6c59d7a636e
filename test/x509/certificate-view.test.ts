import { X509Certificate, type KeyObject } from 'node:crypto'
import { AsnConvert } from '@peculiar/asn1-schema'
import { expect } from '../support/chai.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP256KeyPair,
  generateRsaKeyPair,
  keyUsage,
  parseCertificate,
  randomSerialNumber,
  readCertificateView,
  signCertificate,
  subjectAltName,
  subjectOf,
} from '../../src/lib/x509/index.js'
import { type NameAttribute } from '../../src/lib/x509/name.js'

/**
 * A version 1 certificate (no version field, no extensions) with two CNs and a notAfter past 2049
 * (GeneralizedTime), made by OpenSSL 3.0 on this machine:
 *   openssl req -new -key k -subj "/O=example/CN=first/CN=second" | openssl x509 -req -signkey k -days 36500
 */
const OPENSSL_V1 = `-----BEGIN CERTIFICATE-----
MIIBYjCCAQkCFANk+wNWl9du58V4UA8qngDHXqzPMAoGCCqGSM49BAMCMDMxEDAO
BgNVBAoMB2V4YW1wbGUxDjAMBgNVBAMMBWZpcnN0MQ8wDQYDVQQDDAZzZWNvbmQw
IBcNMjYxMTI3MjM0MzMwWhgPMjEyNjExMDMyMzQzMzBaMDMxEDAOBgNVBAoMB2V4
YW1wbGUxDjAMBgNVBAMMBWZpcnN0MQ8wDQYDVQQDDAZzZWNvbmQwWTATBgcqhkjO
PQIBBggqhkjOPQMBBwNCAATlZ0LBKTQd1GhADiLvEbeJU0Igp5uh9tpJcSCkn+2K
x3Ji+S8UKUMNx/9JI41oeUBmOmgmWtR+3qZTNvzoV4I+MAoGCCqGSM49BAMCA0cA
MEQCIFU/APtU3J674//k3pBalDpdGsDedHvtdolcm3SnbCLrAiAqT4phjCgqZWb5
05k98J6fRFsG3PTRdUPqacgxnUfymg==
-----END CERTIFICATE-----
`

async function signed(
  subject: NameAttribute[],
  opts: { rsa?: boolean; until?: Date; extensions?: boolean; issuer?: Buffer; publicKey?: KeyObject },
) {
  const keys = opts.rsa ? generateRsaKeyPair() : await generateEcdsaP256KeyPair()
  const name = distinguishedName(subject)
  return signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: opts.issuer ?? name,
      notBefore: new Date('2026-03-01T12:00:00.000Z'),
      notAfter: opts.until ?? new Date('2026-03-02T12:00:00.000Z'),
      publicKey: opts.publicKey ?? keys.publicKey,
      extensions: opts.extensions
        ? [
            caBasicConstraints(), // critical
            keyUsage(['digitalSignature', 'keyCertSign']),
            subjectAltName({ ips: ['10.0.0.1'], dns: ['node-1'] }),
            { oid: '1.3.9900.1.1', critical: false, value: Buffer.alloc(3000, 7) }, // an attestation document's size
          ]
        : [],
    },
    keys.privateKey,
  )
}

/** What asn1-schema's full parse says about the same bytes: the reference the view must agree with. */
function referenceView(der: Buffer) {
  const tbs = parseCertificate(der).tbsCertificate
  return {
    subject: Buffer.from(AsnConvert.serialize(tbs.subject)),
    subjectPublicKeyInfo: Buffer.from(AsnConvert.serialize(tbs.subjectPublicKeyInfo)),
    notBefore: tbs.validity.notBefore.getTime().getTime(), // asn1-x509 Time.getTime() gives a Date
    notAfter: tbs.validity.notAfter.getTime().getTime(),
    subjectCommonNames: tbs.subject.flatMap((rdn) =>
      rdn.filter((atv) => atv.type === '2.5.4.3').map((atv) => atv.value.toString()),
    ),
    extensions: (tbs.extensions ?? []).map((e) => ({
      oid: e.extnID,
      critical: e.critical,
      value: Buffer.from(e.extnValue.buffer),
    })),
  }
}

describe('x509: the certificate view agrees with the full parse', () => {
  const cases: Record<string, () => Promise<Buffer>> = {
    'OpenSSL version 1: no version field, no extensions, two CNs, GeneralizedTime notAfter': () =>
      Promise.resolve(new X509Certificate(OPENSSL_V1).raw),
    'ECDSA, critical and non-critical extensions, a 3 kB document': () =>
      signed(
        [
          ['O', 'system:nodes'],
          ['CN', 'node-1'],
        ],
        { extensions: true },
      ),
    'RSA, no extensions, a nonce as the CN (base64 with + / =)': () =>
      signed([['CN', 'q+/0bXlLZGF0YQ==']], { rsa: true }),
    'no CN at all, valid into 2060': () =>
      signed([['O', 'example']], { until: new Date('2060-01-01T00:00:00.000Z') }),
  }
  for (const [name, make] of Object.entries(cases)) {
    it(name, async () => {
      const der = await make()
      const view = readCertificateView(der)
      expect({
        ...view,
        notBefore: view.notBefore.getTime(),
        notAfter: view.notAfter.getTime(),
      }).to.deep.equal(referenceView(der))
      // the SPKI is node:crypto's own encoding of the certificate's key
      expect(view.subjectPublicKeyInfo).to.deep.equal(
        new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' }),
      )
    })
  }

  it("subjectOf gives a PEM certificate's subject as encoded; a certificate it issues chains to it", async () => {
    // OPENSSL_V1's Name holds UTF8Strings, which distinguishedName would not choose for O and CN
    const ca = new X509Certificate(OPENSSL_V1)
    const subject = subjectOf(OPENSSL_V1)
    expect(subject).to.deep.equal(
      Buffer.from(AsnConvert.serialize(parseCertificate(ca.raw).tbsCertificate.subject)),
    )
    const leafKeys = await generateEcdsaP256KeyPair()
    const leaf = await signed([['CN', 'leaf']], { issuer: subject, publicKey: leafKeys.publicKey })
    expect(new X509Certificate(leaf).checkIssued(ca)).to.be.true
    // the leaf's own subject, not its issuer
    const leafSubject = readCertificateView(leaf).subject
    expect(leafSubject).to.deep.equal(
      Buffer.from(AsnConvert.serialize(parseCertificate(leaf).tbsCertificate.subject)),
    )
    expect(leafSubject).to.not.deep.equal(subject)
    expect(() => subjectOf('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')).to.throw()
  })

  it('reads the v1 certificate field by field', () => {
    const view = readCertificateView(new X509Certificate(OPENSSL_V1).raw)
    expect(view.subjectCommonNames).to.deep.equal(['first', 'second'])
    expect(view.notBefore.toISOString()).to.equal('2026-11-27T23:43:30.000Z')
    expect(view.notAfter.toISOString()).to.equal('2126-11-03T23:43:30.000Z')
    expect(view.extensions).to.deep.equal([])
  })
})

describe('x509: the certificate view refuses what is not a certificate, naming the part', () => {
  const der = new X509Certificate(OPENSSL_V1).raw
  const sequence = (...parts: Buffer[]) => {
    const body = Buffer.concat(parts)
    return Buffer.concat([Buffer.from([0x30, body.length]), body])
  }
  const cases: Record<string, [Buffer, RegExp]> = {
    'bytes that are not BER': [Buffer.from([0x30, 0x85, 1, 2]), /^certificate is not DER: /],
    'bytes after the certificate': [Buffer.concat([der, Buffer.from([0])]), /bytes follow the certificate/],
    'an INTEGER instead of the certificate': [
      Buffer.from([0x02, 0x01, 0x05]),
      /Certificate is not a SEQUENCE/,
    ],
    'a certificate whose TBSCertificate is an INTEGER': [
      sequence(Buffer.from([0x02, 0x01, 0x05])),
      /TBSCertificate is not a SEQUENCE/,
    ],
    'a TBSCertificate that stops before its validity': [
      sequence(sequence(Buffer.from([0x02, 0x01, 0x05]))),
      /Validity is not a SEQUENCE/,
    ],
  }
  for (const [name, [bytes, message]] of Object.entries(cases)) {
    it(name, () => {
      expect(() => readCertificateView(bytes)).to.throw(message)
    })
  }
})
