/**
 * The EK certificate chain with an EK certificate as TPM manufacturers issue them: the TCG EK
 * credential profile leaves the subject empty (the TPM's identity is in subjectAltName), and Node
 * then gives no subject at all (undefined, though typed string).
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { expect } from '../support/chai.js'
import { testCertificate } from '../support/test-ca.js'
import { verifiedEkPublicKey } from '../../src/lib/attestation/ek-chain.js'
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
