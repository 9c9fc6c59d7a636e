import {
  createHash,
  generateKeyPairSync,
  X509Certificate,
  type KeyObject,
  type KeyPairKeyObjectResult,
} from 'node:crypto'
import { expect } from '../support/chai.js'
import { runProcess } from '../../src/lib/system/process.js'
import {
  caBasicConstraints,
  distinguishedName,
  extendedKeyUsage,
  generateEcdsaP256KeyPair,
  generateRsaKeyPair,
  keyUsage,
  parseCertificate,
  pemOfSigned,
  randomSerialNumber,
  signCertificate,
  subjectAltName,
  subjectKeyIdentifier,
  toPem,
} from '../../src/lib/x509/index.js'
import { type CertificateExtension } from '../../src/lib/x509/certificate.js'
import { type NameAttribute } from '../../src/lib/x509/name.js'

async function openssl(args: string[], input: string): Promise<string> {
  const res = await runProcess('openssl', args, { input: Buffer.from(input) })
  if (res.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${res.stderr}`)
  return res.stdout
}

const NOW = new Date('2026-03-01T12:00:00.000Z')
const HOUR_MS = 3600_000

/** A self-signed CA as bootstrap data makes one: critical CA:TRUE, keyCertSign, SKI. */
function selfSignedCa(keys: KeyPairKeyObjectResult, cn: string): Buffer {
  const name = distinguishedName([['CN', cn]])
  return signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(NOW.getTime() - HOUR_MS),
      notAfter: new Date(NOW.getTime() + 24 * HOUR_MS),
      publicKey: keys.publicKey,
      extensions: [
        caBasicConstraints(),
        keyUsage(['digitalSignature', 'keyEncipherment', 'keyCertSign']),
        subjectKeyIdentifier(keys.publicKey),
      ],
    },
    keys.privateKey,
  )
}

function signedBy(caDer: Buffer, caKey: KeyObject, leaf: LeafCase, publicKey: KeyObject): Buffer {
  return signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: distinguishedName(leaf.subject),
      issuer: parseCertificate(caDer).tbsCertificate.subject,
      notBefore: NOW,
      notAfter: new Date(NOW.getTime() + HOUR_MS),
      publicKey,
      extensions: leaf.extensions,
    },
    caKey,
  )
}

const ISSUERS: Record<string, { keys: () => Promise<KeyPairKeyObjectResult>; sig: string }> = {
  'RSA 2048': { keys: async () => generateRsaKeyPair(), sig: 'sha256WithRSAEncryption' },
  'ECDSA P-256': { keys: generateEcdsaP256KeyPair, sig: 'ecdsa-with-SHA256' },
}

interface LeafCase {
  subject: NameAttribute[]
  extensions: CertificateExtension[]
  want: { subject: string; san?: string; extKeyUsage?: string[]; keyUsage?: RegExp }
}

const LEAVES: Record<string, LeafCase> = {
  'kubelet (server and client, DNS and IP SANs)': {
    subject: [
      ['CN', 'system:node:cp-0'],
      ['O', 'system:nodes'],
    ],
    extensions: [
      keyUsage(['digitalSignature', 'keyEncipherment']),
      extendedKeyUsage(['clientAuth', 'serverAuth']),
      subjectAltName({ dns: ['cp-0'], ips: ['10.0.0.2', 'fd00::2'] }),
    ],
    want: {
      subject: 'CN=system:node:cp-0\nO=system:nodes',
      san: 'DNS:cp-0, IP Address:10.0.0.2, IP Address:FD00:0:0:0:0:0:0:2',
      extKeyUsage: ['1.3.6.1.5.5.7.3.2', '1.3.6.1.5.5.7.3.1'],
      keyUsage: /Key Usage: critical\s+Digital Signature, Key Encipherment\n/,
    },
  },
  'admin client': {
    subject: [
      ['CN', 'kubernetes-admin'],
      ['O', 'system:masters'],
    ],
    extensions: [keyUsage(['digitalSignature', 'keyEncipherment']), extendedKeyUsage(['clientAuth'])],
    want: {
      subject: 'CN=kubernetes-admin\nO=system:masters',
      extKeyUsage: ['1.3.6.1.5.5.7.3.2'],
      keyUsage: /Key Usage: critical\s+Digital Signature, Key Encipherment\n/,
    },
  },
  'no extensions (the field is left out)': {
    subject: [['CN', 'plain']],
    extensions: [],
    want: { subject: 'CN=plain' },
  },
}

describe('x509: certificates signed by RSA and ECDSA P-256 issuers, read back by node:crypto', () => {
  for (const [issuerName, issuer] of Object.entries(ISSUERS))
    for (const [leafName, leaf] of Object.entries(LEAVES))
      it(`${issuerName} CA → ${leafName}`, async () => {
        const caKeys = await issuer.keys()
        const ca = new X509Certificate(selfSignedCa(caKeys, 'test-ca'))
        const leafKeys = await generateEcdsaP256KeyPair()
        const der = signedBy(ca.raw, caKeys.privateKey, leaf, leafKeys.publicKey)
        const cert = new X509Certificate(der)

        expect(cert.subject).to.equal(leaf.want.subject)
        expect(cert.issuer).to.equal('CN=test-ca').and.to.equal(ca.subject)
        expect(cert.subjectAltName).to.equal(leaf.want.san)
        expect(cert.ca).to.be.false
        expect(ca.ca).to.be.true
        expect(cert.keyUsage).to.deep.equal(leaf.want.extKeyUsage)
        expect(new Date(cert.validFrom).getTime()).to.equal(NOW.getTime())
        expect(new Date(cert.validTo).getTime()).to.equal(NOW.getTime() + HOUR_MS)
        expect(cert.checkIssued(ca), 'issuer name chains').to.be.true
        expect(cert.verify(caKeys.publicKey), 'signed by the CA key').to.be.true
        expect(cert.verify(leafKeys.publicKey), 'not by its own key').to.be.false
        expect(ca.verify(caKeys.publicKey), 'CA self-signature').to.be.true
        expect(cert.publicKey.equals(leafKeys.publicKey)).to.be.true

        const text = await openssl(['x509', '-noout', '-text'], toPem(der))
        expect(text).to.include(`Signature Algorithm: ${issuer.sig}`)
        if (leaf.want.keyUsage) expect(text).to.match(leaf.want.keyUsage)
        else expect(text).to.not.include('X509v3 extensions')
      })
})

describe('x509: CA extensions', () => {
  for (const [issuerName, issuer] of Object.entries(ISSUERS))
    it(`${issuerName}: critical CA:TRUE, keyCertSign, and the SKI is SHA-1 of the public key bits`, async () => {
      const keys = await issuer.keys()
      const pem = toPem(selfSignedCa(keys, 'kubernetes'))
      const text = await openssl(['x509', '-noout', '-text'], pem)
      expect(text).to.match(/Basic Constraints: critical\s+CA:TRUE\n/)
      expect(text).to.match(/Key Usage: critical\s+Digital Signature, Key Encipherment, Certificate Sign\n/)
      const ski = /Subject Key Identifier:\s*\n\s*([0-9A-F:]+)/.exec(text)?.[1]?.replaceAll(':', '')
      // the BIT STRING's content: PKCS#1 RSAPublicKey, or the EC point (the SPKI's last 65 bytes)
      const spki = keys.publicKey.export({ type: 'spki', format: 'der' })
      const bits =
        keys.publicKey.asymmetricKeyType === 'rsa'
          ? keys.publicKey.export({ type: 'pkcs1', format: 'der' })
          : spki.subarray(spki.length - 65)
      expect(ski).to.equal(createHash('sha1').update(bits).digest('hex').toUpperCase())
    })
})

describe('x509: encoding details', () => {
  it('PEM is the DER in base64 lines of 64 characters, and parseCertificate reads PEM and DER alike', async () => {
    const keys = await generateEcdsaP256KeyPair()
    const der = selfSignedCa(keys, 'pem')
    const pem = toPem(der)
    const lines = pem.trimEnd().split('\n')
    expect(lines[0]).to.equal('-----BEGIN CERTIFICATE-----')
    expect(lines.at(-1)).to.equal('-----END CERTIFICATE-----')
    expect(lines.slice(1, -2).every((l) => l.length === 64)).to.be.true
    expect(Buffer.from(lines.slice(1, -1).join(''), 'base64').equals(der)).to.be.true
    expect(parseCertificate(pem).tbsCertificate.serialNumber).to.deep.equal(
      parseCertificate(der).tbsCertificate.serialNumber,
    )
  })

  it('pemOfSigned gives the bytes toPem gives, without decoding, whatever the DER length modulo 48', async () => {
    const keys = await generateEcdsaP256KeyPair()
    // an extension of 0..47 more bytes moves the DER through every base64 line ending
    for (let extra = 0; extra < 48; extra++) {
      const der = signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject: distinguishedName([['CN', 'pem']]),
          issuer: distinguishedName([['CN', 'pem']]),
          notBefore: NOW,
          notAfter: new Date(NOW.getTime() + HOUR_MS),
          publicKey: keys.publicKey,
          extensions: [{ oid: '1.3.9999.1', critical: false, value: Buffer.alloc(extra, 7) }],
        },
        keys.privateKey,
      )
      expect(pemOfSigned(der)).to.equal(toPem(der))
    }
  })

  it('refuses a signing key it has no algorithm for, naming the key type', () => {
    const ed = generateKeyPairSync('ed25519')
    const name = distinguishedName([['CN', 'x']])
    expect(() =>
      signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject: name,
          issuer: name,
          notBefore: NOW,
          notAfter: NOW,
          publicKey: ed.publicKey,
          extensions: [],
        },
        ed.privateKey,
      ),
    ).to.throw(/signing key type ed25519 is not supported/)
  })

  it('randomSerialNumber is always a positive, minimally encoded 16-byte INTEGER', () => {
    for (let i = 0; i < 2_000; i++) {
      const serial = randomSerialNumber()
      expect(serial).to.have.length(16)
      expect(serial[0]).to.be.within(0x40, 0x7f)
    }
  })
})
