/**
 * The EK certificate chain with an EK certificate as TPM manufacturers issue them: the TCG EK
 * credential profile leaves the subject empty (the TPM's identity is in subjectAltName), and Node
 * then gives no subject at all (undefined, though typed string).
 */
import { generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto'
import { expect } from '../support/chai.js'
import { verifiedEkPublicKey } from '../../src/lib/attestation/ek-chain.js'
import { AttestationError } from '../../src/lib/attestation/errors.js'
import { createTpmEkValidator } from '../../src/lib/attestation/tpm-ek.js'
import { readTrustRoots, TrustRootError } from '../../src/lib/attestation/trust-roots.js'
import { CliError } from '../../src/lib/errors/index.js'
import { jsonFields } from '../../src/lib/attestation/json-fields.js'
import {
  caBasicConstraints,
  distinguishedName,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../src/lib/x509/index.js'

const DAY = 24 * 3600_000
const NOW = new Date('2030-01-01T00:00:00Z')
const fields = jsonFields('attestation document')

function certificate(
  subject: ReturnType<typeof distinguishedName>,
  issuer: ReturnType<typeof distinguishedName>,
  publicKey: KeyObject,
  signingKey: KeyObject,
  opts: { ca?: boolean; to?: Date } = {},
): X509Certificate {
  return new X509Certificate(
    toPem(
      signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject,
          issuer,
          notBefore: new Date(NOW.getTime() - DAY),
          notAfter: opts.to ?? new Date(NOW.getTime() + DAY),
          publicKey,
          extensions: opts.ca ? [caBasicConstraints()] : [],
        },
        signingKey,
      ),
    ),
  )
}

describe('EK certificate chain: an EK certificate with an empty subject', () => {
  const rootKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const ekKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const rootName = distinguishedName([['CN', 'Manufacturer Root']])
  const root = certificate(rootName, rootName, rootKeys.publicKey, rootKeys.privateKey, { ca: true })

  it('verifies it and returns its key', () => {
    const ek = certificate(distinguishedName([]), rootName, ekKeys.publicKey, rootKeys.privateKey)
    expect(ek.subject, "node's subject of an empty name").to.equal(undefined)
    const key = verifiedEkPublicKey([ek], [root], NOW, fields)
    const spki = (k: KeyObject) => k.export({ type: 'spki', format: 'der' })
    expect(spki(key.key)).to.deep.equal(spki(ekKeys.publicKey))
  })

  it('names it "(empty name)" when refusing it', () => {
    const late = new Date(NOW.getTime() - 1000)
    const ek = certificate(distinguishedName([]), rootName, ekKeys.publicKey, rootKeys.privateKey, {
      to: late,
    })
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
    const notCa = certificate(distinguishedName([]), rootName, ekKeys.publicKey, rootKeys.privateKey)
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
