/**
 * The EK certificate chain with an EK certificate as TPM manufacturers issue them: the TCG EK
 * credential profile leaves the subject empty (the TPM's identity is in subjectAltName), and Node
 * then gives no subject at all (undefined, though typed string).
 */
import { generateKeyPairSync, type KeyObject, X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import { testCertificate } from '../support/test-ca.js'
import {
  checkManufacturerRoots,
  parseEkCertificates,
  verifiedEkPublicKey,
} from '../../src/lib/attestation/ek-chain.js'
import { AttestationError } from '../../src/lib/attestation/errors.js'
import { createTpmEkValidator } from '../../src/lib/attestation/tpm-ek.js'
import { readTrustRoots, TrustRootError } from '../../src/lib/attestation/trust-roots.js'
import { CliError } from '../../src/lib/errors/index.js'
import { jsonFields } from '../../src/lib/attestation/json-fields.js'

const DAY = 24 * 3600_000
const NOW = new Date('2030-01-01T00:00:00Z')
const fields = jsonFields('attestation document')

describe('EK certificate chain: an EK certificate with an empty subject', () => {
  const ekKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const validity = { notBefore: new Date(NOW.getTime() - DAY), notAfter: new Date(NOW.getTime() + DAY) }
  const rootCa = testCertificate({ cn: 'Manufacturer Root', ca: true, ...validity })
  const root = rootCa.cert
  /** A certificate with an empty subject over the EK's key, signed by the root. */
  const emptySubject = (opts: { notAfter?: Date } = {}) =>
    testCertificate({ cn: '', ca: false, issuer: rootCa, publicKey: ekKeys.publicKey, ...validity, ...opts })
      .cert

  it('verifies it and returns its key', () => {
    const ek = emptySubject()
    expect(ek.subject, "node's subject of an empty name").to.equal(undefined)
    const key = verifiedEkPublicKey([ek], [root], NOW, fields)
    const spki = (k: KeyObject) => k.export({ type: 'spki', format: 'der' })
    expect(spki(key.key)).to.deep.equal(spki(ekKeys.publicKey))
  })

  it('names it "(empty name)" when refusing it', () => {
    const late = new Date(NOW.getTime() - 1000)
    const ek = emptySubject({ notAfter: late })
    const err = (() => {
      try {
        verifiedEkPublicKey([ek], [root], NOW, fields)
      } catch (e: unknown) {
        return e
      }
      throw new Error('accepted')
    })()
    expect(err).to.be.instanceOf(AttestationError)
    expect((err as Error).message).to.equal(
      `EK certificate chain: EndorsementKeyCertificates[0] ((empty name)) expired on ${late.toISOString()}`,
    )
  })

  it('names a subject of several parts in one line', () => {
    const notCa = testCertificate({ cn: 'Root', organization: 'Manufacturer', ca: false })
    expect(() => createTpmEkValidator(new Map(), [notCa.cert])).to.throw(
      CliError,
      'manufacturer root O=Manufacturer, CN=Root is not a CA certificate (basicConstraints CA:TRUE)',
    )
  })

  it('a pinned root with an empty subject that is no CA is named as such, not a TypeError', () => {
    const notCa = emptySubject()
    expect(() => createTpmEkValidator(new Map(), [notCa])).to.throw(
      CliError,
      'manufacturer root (empty name) is not a CA certificate (basicConstraints CA:TRUE)',
    )
    // the same certificate as the operator's config gives it (PEM text)
    expect(() => readTrustRoots(notCa.toString(), '/')).to.throw(
      TrustRootError,
      "a certificate with an empty subject is not a CA certificate (basicConstraints CA:TRUE); list the manufacturer's root or intermediate CA certificates",
    )
  })
})

describe('EK certificate chain: refusals name the certificate and why', () => {
  const validity = { notBefore: new Date(NOW.getTime() - DAY), notAfter: new Date(NOW.getTime() + DAY) }
  const rootCa = testCertificate({ cn: 'Manufacturer Root', ca: true, ...validity })
  const intermediateCa = testCertificate({ cn: 'EK Intermediate', ca: true, issuer: rootCa, ...validity })
  const ekUnder = (issuer: typeof rootCa, opts: { notBefore?: Date; notAfter?: Date } = {}) =>
    testCertificate({ cn: 'EK', ca: false, issuer, ...validity, ...opts })
  const refusal = (run: () => unknown): Error => {
    try {
      run()
    } catch (e: unknown) {
      return e as Error
    }
    throw new Error('accepted')
  }
  const chainRefusal = (certs: X509Certificate[], roots: X509Certificate[] = [rootCa.cert], now = NOW) => {
    const err = refusal(() => verifiedEkPublicKey(certs, roots, now, fields))
    expect(err).to.be.instanceOf(AttestationError)
    return err.message
  }

  it('parse: PEM text, bytes that are no certificate, trailing bytes, each named by its index', () => {
    const ek = ekUnder(rootCa)
    const malformed = (ders: Buffer[]) => refusal(() => parseEkCertificates(ders, fields)).message
    // PEM text parses as X.509 in node: refused for its first byte, before node reads it
    expect(malformed([ek.der, Buffer.from(ek.pem)])).to.equal(
      'malformed attestation document: EndorsementKeyCertificates[1] is not a DER X.509 certificate',
    )
    expect(malformed([Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00])])).to.match(
      /^malformed attestation document: EndorsementKeyCertificates\[0\] is not a DER X\.509 certificate \(.+\)$/,
    )
    expect(malformed([Buffer.concat([ek.der, Buffer.from([0])])])).to.equal(
      'malformed attestation document: EndorsementKeyCertificates[0] is not exactly one DER X.509 certificate',
    )
    expect(parseEkCertificates([ek.der], fields)[0]?.raw).to.deep.equal(ek.der)
  })

  it('no manufacturer roots: a configuration error that says where to list them', () => {
    const err = refusal(() => checkManufacturerRoots([]))
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.equal(
      'tpm-ek attestation needs manufacturer root certificates; none are configured',
    )
    expect((err as CliError).hint).to.equal(
      "list the TPM manufacturers' root CA certificates in attestation.tpmEK.roots",
    )
  })

  it('no certificates at all: the field is empty', () => {
    expect(chainRefusal([])).to.equal('malformed attestation document: EndorsementKeyCertificates is empty')
  })

  it('an EK certificate whose key cannot be read: that error, not a malformed document', () => {
    const ek = ekUnder(rootCa).cert
    const unreadable = new TypeError('the key cannot be read')
    Object.defineProperty(ek, 'publicKey', {
      get() {
        throw unreadable
      },
    })
    expect(refusal(() => verifiedEkPublicKey([ek], [rootCa.cert], NOW, fields))).to.equal(unreadable)
  })

  it('the EK certificate found among later certificates in any order, through an intermediate', () => {
    const ek = ekUnder(intermediateCa)
    const unrelated = testCertificate({ cn: 'Unrelated', ca: true, ...validity })
    const key = verifiedEkPublicKey(
      [ek.cert, unrelated.cert, intermediateCa.cert],
      [rootCa.cert],
      NOW,
      fields,
    )
    expect(key.key.equals(ek.cert.publicKey)).to.equal(true)
  })

  it('no issuer: every root and every other certificate named with its problem', () => {
    const ek = ekUnder(intermediateCa)
    const unrelated = testCertificate({ cn: 'Unrelated', ca: true, ...validity })
    expect(chainRefusal([ek.cert, unrelated.cert])).to.equal(
      'EK certificate chain: EndorsementKeyCertificates[0] (CN=EK), issued by CN=EK Intermediate, ' +
        'chains to none of the 1 configured manufacturer roots (' +
        'root CN=Manufacturer Root: is not its issuer (subject or key identifier differs); ' +
        'EndorsementKeyCertificates[1] (CN=Unrelated): is not its issuer (subject or key identifier differs))',
    )
  })

  it('a root whose key cannot be read verifies nothing', () => {
    const ek = ekUnder(rootCa)
    const unreadable = new X509Certificate(rootCa.der)
    Object.defineProperty(unreadable, 'publicKey', {
      get() {
        throw new Error('unsupported key')
      },
    })
    expect(ek.cert.checkIssued(unreadable), 'named as the issuer').to.equal(true)
    expect(chainRefusal([ek.cert], [unreadable])).to.equal(
      'EK certificate chain: EndorsementKeyCertificates[0] (CN=EK), issued by CN=Manufacturer Root, ' +
        'chains to none of the 1 configured manufacturer roots (root CN=Manufacturer Root: names it as ' +
        "issuer, but the signature does not verify with its key (another CA's key))",
    )
  })

  it('an expired root is named as the manufacturer root', () => {
    const expiredRoot = testCertificate({
      cn: 'Old Root',
      ca: true,
      ...validity,
      notAfter: new Date(NOW.getTime() - 1000),
    })
    const ek = ekUnder(expiredRoot, { notBefore: validity.notBefore })
    expect(chainRefusal([ek.cert], [expiredRoot.cert])).to.equal(
      `EK certificate chain: manufacturer root CN=Old Root expired on ${new Date(NOW.getTime() - 1000).toISOString()}`,
    )
  })

  it('validity bounds are inclusive: valid at the first and at the last second', () => {
    const ek = ekUnder(rootCa)
    const from = new Date(ek.cert.validFrom)
    const to = new Date(ek.cert.validTo)
    expect(() => verifiedEkPublicKey([ek.cert], [rootCa.cert], from, fields)).not.to.throw()
    expect(() => verifiedEkPublicKey([ek.cert], [rootCa.cert], to, fields)).not.to.throw()
    expect(chainRefusal([ek.cert], [rootCa.cert], new Date(from.getTime() - 1000))).to.equal(
      `EK certificate chain: EndorsementKeyCertificates[0] (CN=EK) is not valid before ${from.toISOString()}`,
    )
  })

  it('a validity date node cannot read (year 1 or 10000): refused as unreadable', () => {
    for (const opts of [
      { notBefore: new Date('0001-01-01T00:00:00Z') },
      { notAfter: new Date('+010000-01-01T00:00:00Z') },
    ]) {
      const ek = ekUnder(rootCa, opts)
      expect(chainRefusal([ek.cert]), JSON.stringify(opts)).to.equal(
        'EK certificate chain: EndorsementKeyCertificates[0] (CN=EK) has unreadable validity dates',
      )
    }
  })
})
