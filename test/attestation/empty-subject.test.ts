/**
 * Certificates with an empty subject: Node gives no subject for them (undefined, though typed
 * string), so the one helper that prints a certificate's name for every chain check (SEV-SNP, TDX,
 * EK, evidence files, the CVM validator's root summary) must name it "(empty name)" instead of
 * failing with a TypeError. With real certificates.
 */
import { expect } from '../support/chai.js'
import { testCertificate } from '../support/test-ca.js'
import { oneLine } from '../../src/lib/attestation/one-line-name.js'

describe('a certificate with an empty subject is named, not a TypeError', () => {
  it('"(empty name)" for it, the subject for a named one, on one line', () => {
    const empty = testCertificate({ cn: '', ca: true }).cert
    expect(empty.subject, "node's subject of an empty name").to.equal(undefined)
    expect(oneLine(empty.subject)).to.equal('(empty name)')
    expect(oneLine(testCertificate({ cn: 'AMD ARK', ca: true }).cert.subject)).to.equal('CN=AMD ARK')
    const twoParts = testCertificate({ cn: 'ARK-Genoa', organization: 'AMD', ca: true }).cert.subject
    expect(oneLine(twoParts)).to.equal('O=AMD, CN=ARK-Genoa')
  })
})
