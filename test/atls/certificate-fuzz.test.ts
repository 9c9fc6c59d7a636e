import { randomBytes } from 'node:crypto'
import { expect } from '../support/chai.js'
import { startSwtpm } from '../support/swtpm.js'
import { mutate, seededRandom } from '../support/fuzz.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { AttestationError, createIssuer, createValidator } from '../../src/lib/attestation/index.js'
import { createAttestedCertificate, verifyAttestedCertificate } from '../../src/lib/atls/certificate.js'

describe('attested certificate parsing on hostile input', () => {
  it('2,000 mutated or random certificates are refused with AttestationError, never a crash', async () => {
    const tpm = await startSwtpm()
    const nonce = randomBytes(32)
    const [cert, pcrs] = await Promise.all([
      createAttestedCertificate(createIssuer('qemu-vtpm', tpm.open), nonce),
      readPcrs(tpm.open, [4]),
    ]).finally(() => tpm.stop())
    const validators = [
      createValidator('qemu-vtpm', new Map([[4, { expected: pcrs.get(4)!, warnOnly: false }]])),
    ]
    const rnd = seededRandom(7)
    let accepted = 0
    for (let i = 0; i < 2_000; i++) {
      const der = mutate(cert.der, rnd)
      const ok = await verifyAttestedCertificate(der, validators, nonce).then(
        () => true,
        (err: unknown) => {
          if (err instanceof AttestationError) return false
          throw new Error(`iteration ${i}: unexpected ${String(err)}`, { cause: err })
        },
      )
      if (ok && !der.equals(cert.der)) accepted++ // a flip to the same byte value leaves the certificate unchanged
    }
    expect(accepted).to.equal(0)
  })
})
