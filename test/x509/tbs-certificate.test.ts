import { AsnConvert, OctetString } from '@peculiar/asn1-schema'
import {
  AlgorithmIdentifier,
  Extension,
  Extensions,
  Name,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from '@peculiar/asn1-x509'
import { expect } from '../support/chai.js'
import {
  caBasicConstraints,
  distinguishedName,
  extendedKeyUsage,
  generateEcdsaP256KeyPair,
  generateRsaKeyPair,
  keyUsage,
  randomSerialNumber,
  subjectAltName,
} from '../../src/lib/x509/index.js'
import { type CertificateExtension } from '../../src/lib/x509/certificate.js'
import { algorithmFor } from '../../src/lib/x509/signature-scheme.js'
import { encodeTbsCertificate } from '../../src/lib/x509/tbs-certificate.js'

/** asn1-schema's encoding of the same fields: the reference the asn1js encoder must match byte for byte. */
function referenceTbs(f: Parameters<typeof encodeTbsCertificate>[0]): Buffer {
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: new Uint8Array(f.serialNumber).buffer,
    signature: AsnConvert.parse(f.signature, AlgorithmIdentifier),
    issuer: AsnConvert.parse(f.issuer, Name),
    validity: new Validity({ notBefore: f.notBefore, notAfter: f.notAfter }),
    subject: AsnConvert.parse(f.subject, Name),
    subjectPublicKeyInfo: AsnConvert.parse(f.subjectPublicKeyInfo, SubjectPublicKeyInfo),
    extensions:
      f.extensions.length > 0
        ? new Extensions(
            f.extensions.map(
              (e) =>
                new Extension({ extnID: e.oid, critical: e.critical, extnValue: new OctetString(e.value) }),
            ),
          )
        : undefined,
  })
  return Buffer.from(AsnConvert.serialize(tbs))
}

describe('x509: the TBSCertificate encoder matches asn1-schema byte for byte', () => {
  const name = (cn: string) =>
    Buffer.from(
      AsnConvert.serialize(
        distinguishedName([
          ['CN', cn],
          ['O', 'system:nodes'],
        ]),
      ),
    )
  const cases: Record<
    string,
    { rsa?: boolean; notBefore: Date; notAfter: Date; extensions: CertificateExtension[] }
  > = {
    "a kubelet certificate's profile (ECDSA)": {
      notBefore: new Date('2026-11-27T22:00:00.123Z'),
      notAfter: new Date('2027-11-27T22:00:00.999Z'),
      extensions: [
        keyUsage(['digitalSignature', 'keyEncipherment']),
        extendedKeyUsage(['clientAuth', 'serverAuth']),
        subjectAltName({ dns: ['worker-1'], ips: ['10.0.0.5', 'fd00::5'] }),
      ],
    },
    'a CA (RSA): critical basicConstraints, validity into 2060 (GeneralizedTime)': {
      rsa: true,
      notBefore: new Date('2049-12-31T23:59:59.500Z'),
      notAfter: new Date('2060-01-01T00:00:00.250Z'),
      extensions: [caBasicConstraints(), keyUsage(['keyCertSign'])],
    },
    'no extensions at all (the field is left out)': {
      notBefore: new Date('1999-01-01T00:00:00Z'),
      notAfter: new Date('2050-01-01T00:00:00Z'),
      extensions: [],
    },
  }
  for (const [label, tc] of Object.entries(cases)) {
    it(label, async () => {
      const keys = tc.rsa ? generateRsaKeyPair() : await generateEcdsaP256KeyPair()
      const fields = {
        serialNumber: randomSerialNumber(),
        signature: Buffer.from(AsnConvert.serialize(algorithmFor(keys.privateKey))),
        issuer: name('issuer'),
        subject: name('system:node:worker-1'),
        notBefore: tc.notBefore,
        notAfter: tc.notAfter,
        subjectPublicKeyInfo: keys.publicKey.export({ type: 'spki', format: 'der' }),
        extensions: tc.extensions,
      }
      expect(encodeTbsCertificate(fields).toString('hex')).to.equal(referenceTbs(fields).toString('hex'))
    })
  }

  it('refuses a name that is not one DER element, naming the field', () => {
    const fields = {
      serialNumber: randomSerialNumber(),
      signature: Buffer.from('300a06082a8648ce3d040302', 'hex'),
      issuer: Buffer.concat([name('issuer'), Buffer.from([0])]),
      subject: name('s'),
      notBefore: new Date(),
      notAfter: new Date(),
      subjectPublicKeyInfo: Buffer.from('3000', 'hex'),
      extensions: [],
    }
    expect(() => encodeTbsCertificate(fields)).to.throw(/^issuer is not one DER element$/)
  })
})
