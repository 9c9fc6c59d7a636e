/** A refused attestation's words, as grpc-js hands them back wrapped in its own. */
import { attestationRefusalOf, isAttestationFailure, REFUSAL_PREFIX } from '../../src/lib/atls/failure.js'
import { expect } from '../support/chai.js'

describe('attestation refusals through grpc-js', () => {
  const refusal = `${REFUSAL_PREFIX}untrusted measurement value ab…ab at index 4`
  const cases: Record<string, Error> = {
    'the refusal itself': new Error(refusal),
    "pick-first's wrapping with a trailing resolution note": new Error(
      `14 UNAVAILABLE: No connection established. Last error: Error: ${refusal}. Resolution note: `,
    ),
    'in the details of a cause': new Error('init failed', {
      cause: Object.assign(new Error('14 UNAVAILABLE'), {
        details: `No connection established. Last error: ${refusal}. Resolution note: resolved 1 address`,
      }),
    }),
  }
  for (const [name, err] of Object.entries(cases))
    it(`gives the validator's words only: ${name}`, () => {
      expect(isAttestationFailure(err)).to.equal(true)
      expect(attestationRefusalOf(err)).to.equal(refusal)
    })

  it('anything else keeps its message, without the RPC wrapping', () => {
    const err = new Error(
      '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 10.0.0.2:9000. Resolution note: ',
    )
    expect(isAttestationFailure(err)).to.equal(false)
    expect(attestationRefusalOf(err)).to.equal('connect ECONNREFUSED 10.0.0.2:9000')
  })
})
