/**
 * Certificates with an empty subject: Node gives no subject for them (undefined, though typed
 * string), so every helper that prints a certificate's name must name it "(empty name)" instead of
 * failing with a TypeError. The SEV-SNP, evidence and TDX helpers (the TDX TCB signing refusal and
 * the CVM validator's root summary print through them) each with a real certificate.
 */
import { expect } from '../support/chai.js'
import { testCertificate } from '../support/test-ca.js'
import { oneLine as evidenceOneLine } from '../../src/lib/attestation/evidence-input.js'
import { oneLine as snpOneLine } from '../../src/lib/attestation/snp/chain.js'
import { oneLine as tdxOneLine } from '../../src/lib/attestation/tdx/chain.js'

describe('a certificate with an empty subject is named, not a TypeError', () => {
  const empty = testCertificate({ cn: '', ca: true }).cert
  const named = testCertificate({ cn: 'AMD ARK', ca: true }).cert
  const helpers = { 'snp/chain': snpOneLine, 'evidence-input': evidenceOneLine, 'tdx/chain': tdxOneLine }
  for (const [where, oneLine] of Object.entries(helpers))
    it(`${where}: "(empty name)" for it, the subject for a named one`, () => {
      expect(empty.subject, "node's subject of an empty name").to.equal(undefined)
      expect(oneLine(empty.subject)).to.equal('(empty name)')
      expect(oneLine(named.subject)).to.equal('CN=AMD ARK')
    })
})
