/**
 * What each directly bound CVM variant puts into REPORT_DATA, computed here from its definition
 * (binding.ts): issuer and validator share the function, so a changed binding would pass every
 * end-to-end test; these values are what other implementations (Constellation's) compute.
 */
import { createHash, randomBytes } from 'node:crypto'
import { expect } from '../support/chai.js'
import { expectedReportData, REPORT_DATA_BYTES } from '../../src/lib/attestation/cvm/binding.js'

const sha = (alg: string, ...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash(alg)).digest()

describe('CVM REPORT_DATA bindings', () => {
  const akPub = randomBytes(90)
  const userData = randomBytes(32)
  const nonce = randomBytes(32)

  it("aws-sev-snp: SHA-512 of the AK's public area alone (Constellation's), whatever the nonce", () => {
    expect(expectedReportData('aws-sev-snp', akPub, userData, nonce)).to.deep.equal(sha('sha512', akPub))
    expect(expectedReportData('aws-sev-snp', akPub, randomBytes(8), randomBytes(32))).to.deep.equal(
      sha('sha512', akPub),
    )
  })

  it('gcp-sev-snp and qemu-tdx: SHA-512 of the AK and SHA-256 of the TLS key hash and the nonce', () => {
    const want = sha('sha512', akPub, sha('sha256', userData, nonce))
    expect(expectedReportData('gcp-sev-snp', akPub, userData, nonce)).to.deep.equal(want)
    expect(expectedReportData('qemu-tdx', akPub, userData, nonce)).to.deep.equal(want)
    expect(want).to.have.length(REPORT_DATA_BYTES)
  })
})
