/**
 * verifyAttestedCertificate and its inputs (readPeerCertificate, decodeNonce, the challenge's
 * credential framing), checked refusal by refusal with the fake attestation authority: no swtpm, so
 * each case isolates one check of aTLS and asserts which refusal it gives.
 */
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import { createFakeAttestation, FAKE_ATTESTATION_OID } from '../support/fake-attestation.js'
import { AttestationError, type ActivationTarget, type Validator } from '../../src/lib/attestation/index.js'
import {
  CERT_VALIDITY_SLACK_MS,
  createAttestedCertificate,
  prepareCertificateEncoder,
  readPeerCertificate,
  verifyAttestedCertificate,
} from '../../src/lib/atls/certificate.js'
import { decodeNonce, encodeNonce } from '../../src/lib/atls/nonce.js'
import {
  ATTEST_PATH,
  CHALLENGE_PATH,
  ChallengeService,
  decodeAttestation,
  decodeCredential,
  encodeAttestation,
  encodeCredential,
} from '../../src/lib/atls/challenge.js'
import { distinguishedName, randomSerialNumber, signCertificate } from '../../src/lib/x509/index.js'

const refusal = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )

async function expectRefusal(p: Promise<unknown>, message: string | RegExp): Promise<void> {
  const err = await refusal(p)
  expect(err).to.be.instanceOf(AttestationError)
  if (typeof message === 'string') expect((err as Error).message).to.equal(message)
  else expect((err as Error).message).to.match(message)
}

/** A self-signed certificate with the given subject attributes and no attestation extension. */
function plainCertificate(subject: Array<['CN' | 'O', string]>, extensionOids: string[] = []): Buffer {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const name = distinguishedName(subject)
  const now = Date.now()
  return signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 60_000),
      publicKey,
      extensions: extensionOids.map((oid) => ({ oid, critical: false, value: Buffer.from([5, 0]) })),
    },
    privateKey,
  )
}

describe('attested certificate checks (fake attestation)', () => {
  const authority = createFakeAttestation()
  const validator = authority.validator()
  const nonce = randomBytes(32)

  it('accepts an honest certificate and returns what its document proved', async () => {
    const cert = await createAttestedCertificate(authority.issuer(), nonce)
    const got = await verifyAttestedCertificate(cert.der, [validator], nonce)
    expect(got.userData).to.have.length(32)
    expect(got.activation).to.equal(undefined)
  })

  it('warms the encoder (a server, before its first handshake) with a throwaway certificate it returns', async () => {
    const cert = new X509Certificate(await prepareCertificateEncoder())
    expect(cert.subject).to.equal('CN=Constellation')
    expect(cert.verify(cert.publicKey)).to.equal(true)
  })

  it('refuses a document that attests another key than the certificate’s', async () => {
    const cert = await createAttestedCertificate(authority.issuer('swapped-key'), nonce)
    await expectRefusal(
      verifyAttestedCertificate(cert.der, [validator], nonce),
      'certificate hash does not match user data: the certificate key is not the attested key',
    )
  })

  it(`is valid ${CERT_VALIDITY_SLACK_MS / 3_600_000} hours either side of its issue time, to the second`, async () => {
    const issued = new Date(Math.floor(Date.now() / 1000) * 1000)
    const cert = await createAttestedCertificate(authority.issuer(), nonce, issued)
    const at = (offsetMs: number) =>
      verifyAttestedCertificate(cert.der, [validator], nonce, { now: new Date(issued.getTime() + offsetMs) })
    expect((await at(-CERT_VALIDITY_SLACK_MS)).userData).to.have.length(32)
    expect((await at(CERT_VALIDITY_SLACK_MS)).userData).to.have.length(32)
    const from = new Date(issued.getTime() - CERT_VALIDITY_SLACK_MS).toISOString()
    const to = new Date(issued.getTime() + CERT_VALIDITY_SLACK_MS).toISOString()
    const early = new Date(issued.getTime() - CERT_VALIDITY_SLACK_MS - 1).toISOString()
    await expectRefusal(
      at(-CERT_VALIDITY_SLACK_MS - 1),
      `peer certificate expired or not yet valid (valid ${from} to ${to}, now ${early})`,
    )
    await expectRefusal(at(CERT_VALIDITY_SLACK_MS + 1), /^peer certificate expired or not yet valid/)
    // an hour-old certificate is still valid now (clocks of nodes and operators differ)
    const hourOld = await createAttestedCertificate(
      authority.issuer(),
      nonce,
      new Date(Date.now() - 3_600_000),
    )
    expect((await verifyAttestedCertificate(hourOld.der, [validator], nonce)).userData).to.have.length(32)
  })

  it('names the OIDs it wanted and the extensions it found when none is an attestation', async () => {
    const bare = await createAttestedCertificate(undefined, nonce)
    await expectRefusal(
      verifyAttestedCertificate(bare.der, [validator], nonce),
      `unknown OID: no attestation extension for ${FAKE_ATTESTATION_OID} (qemu-vtpm); certificate extensions: none`,
    )
    const other: Validator = { ...validator, oid: '1.3.9900.99.2' }
    const fake = await createAttestedCertificate(authority.issuer(), nonce)
    await expectRefusal(
      verifyAttestedCertificate(fake.der, [other, { ...other, oid: '1.3.9900.99.3' }], nonce),
      `unknown OID: no attestation extension for 1.3.9900.99.2 (qemu-vtpm), 1.3.9900.99.3 (qemu-vtpm); certificate extensions: ${FAKE_ATTESTATION_OID}`,
    )
  })

  it('lists every extension it found, comma-separated', async () => {
    await expectRefusal(
      verifyAttestedCertificate(plainCertificate([['CN', 'x']], ['1.2.3.4', '1.2.3.5']), [validator], nonce),
      `unknown OID: no attestation extension for ${FAKE_ATTESTATION_OID} (qemu-vtpm); certificate extensions: 1.2.3.4, 1.2.3.5`,
    )
  })

  it('refuses a certificate whose self-signature was broken, before reading its document', async () => {
    const cert = await createAttestedCertificate(authority.issuer(), nonce)
    const der = Buffer.from(cert.der)
    der[der.length - 5]! ^= 0xff // inside the signature value
    await expectRefusal(
      verifyAttestedCertificate(der, [validator], nonce),
      'peer certificate is not correctly self-signed',
    )
  })

  it('refuses a certificate whose key cannot be read (an unknown curve), as not self-signed', async () => {
    const cert = await createAttestedCertificate(authority.issuer(), nonce)
    const der = Buffer.from(cert.der)
    const p256 = Buffer.from('06082a8648ce3d030107', 'hex') // OID 1.2.840.10045.3.1.7, prime256v1
    const at = der.indexOf(p256)
    expect(at, "the key's curve").to.be.greaterThan(0)
    der[at + p256.length - 1] = 0x7f // 1.2.840.10045.3.1.127: no curve OpenSSL knows
    expect(() => new X509Certificate(der).publicKey).to.throw(/decode error/)
    await expectRefusal(
      verifyAttestedCertificate(der, [validator], nonce),
      'peer certificate is not correctly self-signed',
    )
  })

  describe('a document that needs credential activation (tpm-ek)', () => {
    const target: ActivationTarget = {
      ek: {
        key: generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey,
        nameAlg: 0x000b,
        symmetricKeyBits: 128,
      },
      akName: Buffer.from('000bfeed', 'hex'),
    }
    const needsActivation = (proven: boolean): Validator => ({
      ...validator,
      variant: 'tpm-ek',
      validate: async (doc, n, expected) => ({
        ...(await validator.validate(doc, n, expected)),
        activation: { ...target, proven },
      }),
    })

    it('fails closed when the connection cannot have the peer activate', async () => {
      const cert = await createAttestedCertificate(authority.issuer(), nonce)
      await expectRefusal(
        verifyAttestedCertificate(cert.der, [needsActivation(false)], nonce),
        "tpm-ek: the peer's attestation counts only after credential activation, which this connection does not perform",
      )
    })

    it('counts once the peer activated, and not when activation fails', async () => {
      const cert = await createAttestedCertificate(authority.issuer(), nonce)
      const asked: ActivationTarget[] = []
      const got = await verifyAttestedCertificate(cert.der, [needsActivation(false)], nonce, {
        activate: async (t) => void asked.push(t),
      })
      expect(asked).to.have.length(1)
      expect(asked[0]?.akName).to.deep.equal(target.akName)
      expect(got.activation).to.deep.include({ proven: true, akName: target.akName })
      await expect(
        verifyAttestedCertificate(cert.der, [needsActivation(false)], nonce, {
          activate: () => Promise.reject(new AttestationError('activation: wrong secret')),
        }),
      ).to.be.rejectedWith(AttestationError, 'activation: wrong secret')
    })

    it('takes a document that proved activation as it is, without asking again', async () => {
      const cert = await createAttestedCertificate(authority.issuer(), nonce)
      let asked = 0
      const got = await verifyAttestedCertificate(cert.der, [needsActivation(true)], nonce, {
        activate: async () => void asked++,
      })
      expect(asked).to.equal(0)
      expect(got.activation?.proven).to.equal(true)
    })
  })

  describe('readPeerCertificate', () => {
    it('refuses bytes that are not DER X.509, and bytes after the certificate', async () => {
      await expectRefusal(
        readPeerCertificate(Buffer.from('not a certificate')),
        'peer certificate is not valid DER X.509',
      )
      const err = await refusal(readPeerCertificate(Buffer.from('not a certificate')))
      expect((err as Error).cause).to.be.instanceOf(Error)
      const der = plainCertificate([['CN', 'x']])
      await expectRefusal(
        readPeerCertificate(Buffer.concat([der, Buffer.from([0])])),
        /^peer certificate (has bytes outside its DER encoding|is not valid DER X\.509)$/,
      )
    })

    it('refuses a certificate in BER that is not DER: its outer length in one octet more than needed', async () => {
      const der = plainCertificate([['CN', 'x']])
      expect(der.subarray(0, 2).toString('hex'), 'a two-octet length').to.equal('3082')
      // 30 82 LL LL → 30 83 00 LL LL: BER readers accept it; node re-encodes it as DER, one byte shorter
      const ber = Buffer.concat([Buffer.from([0x30, 0x83, 0x00]), der.subarray(2)])
      await expectRefusal(readPeerCertificate(ber), 'peer certificate has bytes outside its DER encoding')
    })
  })

  describe('the nonce in a TLS field', () => {
    const good = encodeNonce(Buffer.alloc(32, 7))
    it('round-trips 32 bytes as padded standard base64', () => {
      expect(good).to.have.length(44)
      expect(decodeNonce(good, 'ServerName')).to.deep.equal(Buffer.alloc(32, 7))
    })
    for (const [name, text] of Object.entries({
      'a missing field': undefined,
      'a character before it': `x${good}`,
      'a character after it': `${good}x`,
      'URL-safe base64': encodeNonce(Buffer.alloc(32, 0xfb)).replaceAll('+', '-').replaceAll('/', '_'),
      'a 33-byte value': encodeNonce(Buffer.alloc(33)),
    }))
      it(`refuses ${name}, naming where it looked`, () => {
        expect(() => decodeNonce(text, 'the client certificate CN'))
          .to.throw(AttestationError)
          .with.property('message', 'the client certificate CN does not carry a 32-byte base64 nonce')
      })
  })

  describe("the challenge answer's credential", () => {
    const made = { credentialBlob: Buffer.alloc(300, 1), encryptedSecret: Buffer.alloc(2, 2) }
    it('round-trips as two big-endian sized fields', () => {
      const wire = encodeCredential(made)
      expect(wire.subarray(0, 2)).to.deep.equal(Buffer.from([0x01, 0x2c]))
      expect(wire.subarray(302, 304)).to.deep.equal(Buffer.from([0, 2]))
      expect(wire).to.have.length(306)
      expect(decodeCredential(wire)).to.deep.equal(made)
      expect(
        decodeCredential(
          encodeCredential({ credentialBlob: Buffer.alloc(0), encryptedSecret: Buffer.alloc(0) }),
        ),
      ).to.deep.equal({
        credentialBlob: Buffer.alloc(0),
        encryptedSecret: Buffer.alloc(0),
      })
    })
    const wire = encodeCredential(made)
    const cases: Record<string, { bytes: Buffer; want: string }> = {
      'no length at all': { bytes: Buffer.alloc(1), want: 'challenge answer: credentialBlob is cut short' },
      'a blob shorter than its length': {
        bytes: wire.subarray(0, 301),
        want: 'challenge answer: credentialBlob is cut short',
      },
      'no secret length': {
        bytes: wire.subarray(0, 303),
        want: 'challenge answer: encryptedSecret is cut short',
      },
      'a secret shorter than its length': {
        bytes: wire.subarray(0, 305),
        want: 'challenge answer: encryptedSecret is cut short',
      },
      'bytes after the credential': {
        bytes: Buffer.concat([wire, Buffer.from([0])]),
        want: 'challenge answer: bytes after the credential',
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(`refuses ${name}`, () => {
        expect(() => decodeCredential(tc.bytes))
          .to.throw(AttestationError)
          .with.property('message', tc.want)
      })
    it('is carried by unary RPCs that pass raw bytes: Issue, then Attest', () => {
      const { issue, attest } = ChallengeService
      expect(issue?.path).to.equal(CHALLENGE_PATH)
      expect(CHALLENGE_PATH).to.equal('/atls.Challenge/Issue')
      expect(attest?.path).to.equal(ATTEST_PATH)
      expect(ATTEST_PATH).to.equal('/atls.Challenge/Attest')
      expect([attest?.requestStream, attest?.responseStream]).to.deep.equal([false, false])
      expect([issue?.requestStream, issue?.responseStream]).to.deep.equal([false, false])
      const bytes = Buffer.from([1, 2, 3])
      expect(issue?.requestSerialize(bytes)).to.equal(bytes)
      expect(issue?.requestDeserialize(bytes)).to.equal(bytes)
      expect(issue?.responseSerialize(bytes)).to.equal(bytes)
      expect(issue?.responseDeserialize(bytes)).to.equal(bytes)
    })
  })

  describe('the Attest request on the wire', () => {
    it('carries the variant OID and the document, and reads back what was written', () => {
      const document = Buffer.from('{"quote":"..."}')
      const wire = encodeAttestation('1.3.9900.1.3', document)
      expect(wire[0]).to.equal('1.3.9900.1.3'.length)
      expect(decodeAttestation(wire)).to.deep.equal({ oid: '1.3.9900.1.3', document })
      expect(decodeAttestation(encodeAttestation('1.2', Buffer.alloc(0))).document).to.have.length(0)
    })
    const cases: Record<string, { bytes: Buffer; want: string }> = {
      'an empty request': { bytes: Buffer.alloc(0), want: 'attest request: the variant OID is cut short' },
      'an OID longer than the bytes': {
        bytes: Buffer.concat([Buffer.from([20]), Buffer.from('1.2.3')]),
        want: 'attest request: the variant OID is cut short',
      },
      'an OID that is not one': {
        bytes: encodeAttestation('qemu-vtpm', Buffer.from('{}')),
        want: 'attest request: the variant OID is not an OID',
      },
      'an OID with a prefix': {
        bytes: encodeAttestation('x1.2.3', Buffer.from('{}')),
        want: 'attest request: the variant OID is not an OID',
      },
      'an OID with a suffix': {
        bytes: encodeAttestation('1.2.3x', Buffer.from('{}')),
        want: 'attest request: the variant OID is not an OID',
      },
      'a first arc other than 0, 1 or 2': {
        bytes: encodeAttestation('3.1.2', Buffer.from('{}')),
        want: 'attest request: the variant OID is not an OID',
      },
      'a first arc of two digits': {
        bytes: encodeAttestation('12.3', Buffer.from('{}')),
        want: 'attest request: the variant OID is not an OID',
      },
      'a single arc': {
        bytes: encodeAttestation('1', Buffer.from('{}')),
        want: 'attest request: the variant OID is not an OID',
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(`refuses ${name}`, () => {
        expect(() => decodeAttestation(tc.bytes))
          .to.throw(AttestationError)
          .with.property('message', tc.want)
      })
    it('writes an OID of 255 bytes, and refuses one over that', () => {
      const longest = '1.' + '2'.repeat(253)
      expect(decodeAttestation(encodeAttestation(longest, Buffer.alloc(1))).oid).to.equal(longest)
      expect(() => encodeAttestation('1.' + '2'.repeat(300), Buffer.alloc(0))).to.throw(
        AttestationError,
        /longer than 255 bytes/,
      )
    })
  })
})
