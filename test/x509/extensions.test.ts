import { X509Certificate } from 'node:crypto'
import { AsnConvert } from '@peculiar/asn1-schema'
import { GeneralName, SubjectAlternativeName } from '@peculiar/asn1-x509'
import { expect } from '../support/chai.js'
import {
  distinguishedName,
  generateEcdsaP256KeyPair,
  randomSerialNumber,
  signCertificate,
  subjectAltName,
} from '../../src/lib/x509/index.js'

/** What asn1-x509's own encoder makes of the same names: the reference subjectAltName is held to. */
function reference(names: { dns?: string[]; ips?: string[] }): Buffer {
  const general = [
    ...(names.dns ?? []).map((dNSName) => new GeneralName({ dNSName })),
    ...(names.ips ?? []).map((iPAddress) => new GeneralName({ iPAddress })),
  ]
  return Buffer.from(AsnConvert.serialize(new SubjectAlternativeName(general)))
}

describe('x509 subjectAltName', () => {
  const cases: Record<string, { dns?: string[]; ips?: string[] }> = {
    "a kubelet's node name and IPv4 address": { dns: ['worker-1'], ips: ['10.0.0.5'] },
    'DNS names only': { dns: ['kubernetes', 'kubernetes.default.svc', 'cp-0'] },
    'IPv6, compressed and full': { ips: ['fd00::5', '2001:db8:0:0:0:0:0:1', '::1'] },
    'every kind, many': {
      dns: Array.from({ length: 20 }, (_, i) => `node-${i}.cluster.local`),
      ips: Array.from({ length: 20 }, (_, i) => `10.0.${i}.1`),
    },
    // past 127 bytes the SEQUENCE's length takes the long form
    'a long DNS name': { dns: ['a'.repeat(200)] },
  }
  for (const [name, names] of Object.entries(cases))
    it(`encodes ${name} byte for byte as asn1-x509 does`, () => {
      const ext = subjectAltName(names)
      expect(Buffer.from(ext.value).toString('hex')).to.equal(reference(names).toString('hex'))
      expect(ext).to.include({ oid: '2.5.29.17', critical: false })
    })

  it('OpenSSL reads the names from a certificate that carries it', async () => {
    const { privateKey, publicKey } = await generateEcdsaP256KeyPair()
    const subject = distinguishedName([['CN', 'worker-1']])
    const der = signCertificate(
      {
        serialNumber: randomSerialNumber(),
        subject,
        issuer: subject,
        notBefore: new Date(),
        notAfter: new Date(Date.now() + 60_000),
        publicKey,
        extensions: [subjectAltName({ dns: ['worker-1'], ips: ['10.0.0.5', 'fd00::5'] })],
      },
      privateKey,
    )
    expect(new X509Certificate(der).subjectAltName).to.equal(
      'DNS:worker-1, IP Address:10.0.0.5, IP Address:FD00:0:0:0:0:0:0:5',
    )
  })

  it('refuses a DNS name that is not ASCII, and an address that is not one, naming it', () => {
    expect(() => subjectAltName({ dns: ['wörker-1'] })).to.throw(
      'subjectAltName: DNS name "wörker-1" is not ASCII (IA5String)',
    )
    expect(() => subjectAltName({ ips: ['10.0.0'] })).to.throw()
  })
})
