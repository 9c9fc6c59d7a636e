/** Single DER values (AMD's VCEK extensions) and the SHA-384 / RSA-PSS signature schemes. */
import { generateKeyPairSync, X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import {
  decodeDerIa5String,
  decodeDerInteger,
  distinguishedName,
  encodeDerIa5String,
  encodeDerInteger,
  parseCertificate,
  randomSerialNumber,
  signCertificate,
} from '../../src/lib/x509/index.js'
import { type SignatureScheme } from '../../src/lib/x509/signature-scheme.js'

describe('DER values', () => {
  it('round-trips INTEGERs and IA5Strings as AMD writes them', () => {
    expect(Buffer.from(encodeDerInteger(209)).toString('hex')).to.equal('020200d1')
    expect(decodeDerInteger(Buffer.from('020200d1', 'hex'))).to.equal(209)
    expect(decodeDerIa5String(encodeDerIa5String('Milan-B0'))).to.equal('Milan-B0')
  })

  it('refuses trailing bytes, a non-minimal length, and the wrong type', () => {
    expect(() => decodeDerInteger(Buffer.from('020105ff', 'hex'))).to.throw(/trailing bytes or a non-minimal/)
    expect(() => decodeDerInteger(Buffer.from('02810105', 'hex'))).to.throw(/not a DER INTEGER/)
    expect(() => decodeDerIa5String(Buffer.from('0c054d696c616e', 'hex'))).to.throw(/not a DER IA5String/)
    expect(() => decodeDerInteger(Buffer.alloc(0))).to.throw(/not a DER INTEGER/)
  })
})

describe('signature schemes', () => {
  const cases: [SignatureScheme, () => ReturnType<typeof generateKeyPairSync>, string][] = [
    ['sha384', () => generateKeyPairSync('ec', { namedCurve: 'P-384' }), '1.2.840.10045.4.3.3'],
    ['sha384', () => generateKeyPairSync('rsa', { modulusLength: 2048 }), '1.2.840.113549.1.1.12'],
    ['rsa-pss-sha384', () => generateKeyPairSync('rsa', { modulusLength: 2048 }), '1.2.840.113549.1.1.10'],
  ]
  for (const [scheme, keys, oid] of cases) {
    it(`${scheme} with ${oid}: a self-signed certificate node:crypto verifies`, () => {
      const { publicKey, privateKey } = keys()
      const der = signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject: distinguishedName([['CN', 'scheme test']]),
          issuer: distinguishedName([['CN', 'scheme test']]),
          notBefore: new Date(Date.now() - 1000),
          notAfter: new Date(Date.now() + 3600_000),
          publicKey,
          extensions: [],
        },
        privateKey,
        scheme,
      )
      expect(parseCertificate(der).signatureAlgorithm.algorithm).to.equal(oid)
      expect(new X509Certificate(der).verify(publicKey)).to.equal(true)
    })
  }

  it('refuses a key that does not fit the scheme', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const fields = {
      serialNumber: randomSerialNumber(),
      subject: distinguishedName([['CN', 'x']]),
      issuer: distinguishedName([['CN', 'x']]),
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 1000),
      publicKey,
      extensions: [],
    }
    expect(() => signCertificate(fields, privateKey, 'sha384')).to.throw(
      /ec \(prime256v1\) is not supported with scheme sha384/,
    )
    expect(() => signCertificate(fields, privateKey, 'rsa-pss-sha384')).to.throw(
      /not supported with scheme rsa-pss-sha384/,
    )
  })
})
