/** Each attestation variant states what it proves, in one place; the CLI and the README say the same. */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import {
  ATTESTATION_VARIANTS,
  attestationAssurance,
  describeAssurance,
} from '../../src/lib/attestation/index.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'

describe('attestation variants: what each proves', () => {
  const cases: Record<string, { anchored: boolean; says: RegExp }> = {
    'qemu-vtpm': { anchored: false, says: /^qemu-vtpm is NOT anchored: it proves .*any TPM or program/ },
    'tpm-ek': {
      anchored: true,
      says: /^tpm-ek is anchored: it proves .*not prove that the VM's memory is encrypted/,
    },
    'aws-sev-snp': {
      anchored: true,
      says: /^aws-sev-snp is anchored: .*SEV-SNP guest.*VLEK.*SHA-512 of the attestation key,/,
    },
    'gcp-sev-snp': {
      anchored: true,
      says: /^gcp-sev-snp is anchored: .*SEV-SNP guest.*VCEK.*with the TLS key and nonce/,
    },
    'azure-sev-snp': {
      anchored: true,
      says: /^azure-sev-snp is anchored: .*SEV-SNP guest.*HCL runtime data/,
    },
    'qemu-tdx': {
      anchored: true,
      says: /^qemu-tdx is anchored: .*TDX trust domain.*with the TLS key and nonce/,
    },
    'azure-tdx': { anchored: true, says: /^azure-tdx is anchored: .*TDX trust domain.*HCL runtime data/ },
  }

  it('every variant has a statement', () => {
    expect(Object.keys(cases)).to.have.members([...ATTESTATION_VARIANTS])
  })

  for (const [variant, tc] of Object.entries(cases))
    it(`${variant}: anchored ${tc.anchored}, and the text says what it proves and what not`, () => {
      const a = attestationAssurance(variant as (typeof ATTESTATION_VARIANTS)[number])
      expect(a).to.include({ variant, anchored: tc.anchored })
      expect(a.proves).to.be.a('string').and.not.be.empty
      expect(a.doesNotProve).to.be.a('string').and.not.be.empty
      expect(describeAssurance(a)).to.match(tc.says)
    })

  it("the README's Security section quotes every variant's statement", async () => {
    const readme = (await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8')).replace(/\s+/g, ' ')
    const security = readme.slice(readme.indexOf('## Security'))
    for (const variant of ATTESTATION_VARIANTS) {
      const a = attestationAssurance(variant)
      expect(security, `${variant} proves`).to.include(a.proves)
      expect(security, `${variant} does not prove`).to.include(a.doesNotProve)
    }
  })
})
