import { randomBytes, X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import { mutate, seededRandom } from '../support/fuzz.js'
import { startSwtpm } from '../support/swtpm.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { AttestationError } from '../../src/lib/attestation/index.js'
import {
  createTpmEkIssuer,
  createTpmEkValidator,
  type TpmEkValidator,
} from '../../src/lib/attestation/tpm-ek.js'
import {
  decodeActivationRequest,
  encodeActivationRequest,
} from '../../src/lib/attestation/activation-request.js'
import { decodeDocument, encodeDocument } from '../../src/lib/attestation/document.js'

/** Replaces top-level keys of the document's JSON. */
function withTop(doc: Buffer, patch: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(doc.toString()) as object), ...patch }))
}

describe('tpm-ek validator on hostile documents and activation requests', function () {
  this.timeout(120_000)
  const nonce = randomBytes(32)
  const userData = randomBytes(32)
  let doc: Buffer
  let request: Buffer
  let proof: Buffer
  let expected: { secret: Buffer; akName: Buffer }
  let validator: TpmEkValidator
  let ekDer: Buffer
  let intermediateDer: Buffer

  before(async () => {
    const tpm = await startSwtpm({ ekCertificate: true })
    try {
      const issuer = createTpmEkIssuer(tpm.open)
      const pcrs = await readPcrs(tpm.open, [4, 15])
      const intermediate = new X509Certificate(tpm.ekCa!.intermediate)
      validator = createTpmEkValidator(
        new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }])),
        [new X509Certificate(tpm.ekCa!.root)],
      )
      // the intermediate travels beside the EK certificate, so the chain has two links to break
      const bare = decodeActivationRequest(await issuer.activationRequest())
      ekDer = bare.ekCertificates[0]!
      intermediateDer = intermediate.raw
      request = encodeActivationRequest({ ...bare, ekCertificates: [ekDer, intermediateDer] })
      const challenge = await validator.challengeActivation(request)
      expected = challenge.expected
      proof = await issuer.activate(challenge.made)
      const issued = decodeDocument(await issuer.issue(userData, nonce, proof))
      doc = encodeDocument({ ...issued, ekCertificates: [ekDer, intermediateDer] })
    } finally {
      await tpm.stop()
    }
    await validator.validate(doc, nonce, expected)
  })

  const b64 = (b: Buffer) => b.toString('base64')
  const cases: Record<string, { input: () => Buffer; want: string | RegExp }> = {
    'EndorsementKeyCertificates is not a list': {
      input: () => withTop(doc, { EndorsementKeyCertificates: b64(ekDer) }),
      want: 'malformed attestation document: EndorsementKeyCertificates must be a non-empty list (the EK certificate first, then intermediates)',
    },
    'EndorsementKeyCertificates is empty': {
      input: () => withTop(doc, { EndorsementKeyCertificates: [] }),
      want: /EndorsementKeyCertificates must be a non-empty list/,
    },
    'five certificates': {
      input: () => withTop(doc, { EndorsementKeyCertificates: Array(5).fill(b64(ekDer)) }),
      want: 'malformed attestation document: EndorsementKeyCertificates has 5 entries, more than 4',
    },
    'a certificate in wrong base64': {
      input: () => withTop(doc, { EndorsementKeyCertificates: [b64(ekDer), 'not*base64'] }),
      want: 'malformed attestation document: EndorsementKeyCertificates[1] must be standard base64',
    },
    'a certificate as URL-safe base64': {
      input: () =>
        withTop(doc, { EndorsementKeyCertificates: [Buffer.from([0xfb, 0xff, 0xbf]).toString('base64url')] }),
      want: 'malformed attestation document: EndorsementKeyCertificates[0] must be standard base64',
    },
    'an empty certificate': {
      input: () => withTop(doc, { EndorsementKeyCertificates: [''] }),
      want: 'malformed attestation document: EndorsementKeyCertificates[0] is 0 bytes, fewer than 1',
    },
    'a 9 KiB certificate': {
      input: () => withTop(doc, { EndorsementKeyCertificates: [b64(Buffer.alloc(9 * 1024, 0x30))] }),
      want: 'malformed attestation document: EndorsementKeyCertificates[0] is 9216 bytes, more than 8192',
    },
    'a truncated EK certificate': {
      input: () => withTop(doc, { EndorsementKeyCertificates: [b64(ekDer.subarray(0, 200))] }),
      want: /^malformed attestation document: EndorsementKeyCertificates\[0\] is not a DER X\.509 certificate \(/,
    },
    'a PEM certificate where DER belongs': {
      input: () =>
        withTop(doc, {
          EndorsementKeyCertificates: [b64(Buffer.from(new X509Certificate(ekDer).toString()))],
        }),
      want: 'malformed attestation document: EndorsementKeyCertificates[0] is not a DER X.509 certificate',
    },
    'bytes after the DER certificate': {
      input: () =>
        withTop(doc, { EndorsementKeyCertificates: [b64(Buffer.concat([ekDer, Buffer.from([0])]))] }),
      want: 'malformed attestation document: EndorsementKeyCertificates[0] is not exactly one DER X.509 certificate',
    },
    'the intermediate first': {
      input: () => withTop(doc, { EndorsementKeyCertificates: [b64(intermediateDer), b64(ekDer)] }),
      // it chains to the root, but its key is the CA's, no EK's
      want: /^malformed attestation document: EndorsementKeyCertificates\[0\] holds no EK key \(EK public key: RSA 3072 is not/,
    },
    'an ActivationProof of 65 bytes': {
      input: () => withTop(doc, { ActivationProof: b64(Buffer.alloc(65)) }),
      want: 'malformed attestation document: ActivationProof is 65 bytes, more than 64',
    },
    'an ActivationProof that is a number': {
      input: () => withTop(doc, { ActivationProof: 5 }),
      want: 'malformed attestation document: ActivationProof must be standard base64',
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`refuses ${name}, naming the field`, async () => {
      const err = await validator.validate(tc.input(), nonce, expected).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(AttestationError)
      if (typeof tc.want === 'string') expect((err as Error).message).to.equal(tc.want)
      else expect((err as Error).message).to.match(tc.want)
    })

  it('refuses malformed activation requests with AttestationError naming the field', async () => {
    const req = decodeActivationRequest(request)
    const bad: Array<[Buffer, string | RegExp]> = [
      [Buffer.from('{'), /^malformed activation request: document is not JSON/],
      [Buffer.from('[]'), 'malformed activation request: document must be an object'],
      [
        Buffer.from(JSON.stringify({ EndorsementKeyCertificates: [b64(ekDer)] })),
        'malformed activation request: AkPub must be standard base64',
      ],
      [
        encodeActivationRequest({ ...req, akPub: Buffer.from('garbage') }),
        /^malformed activation request: AkPub: /,
      ],
      [
        encodeActivationRequest({ ...req, ekCertificates: [ekDer.subarray(1)] }),
        'malformed activation request: EndorsementKeyCertificates[0] is not a DER X.509 certificate',
      ],
      [Buffer.alloc(70_000, 0x20), /^malformed activation request: document is 70000 bytes, more than/],
    ]
    for (const [input, want] of bad) {
      const err = await validator.challengeActivation(input).catch((e: unknown) => e)
      expect(err, String(want)).to.be.instanceOf(AttestationError)
      if (typeof want === 'string') expect((err as Error).message).to.equal(want)
      else expect((err as Error).message).to.match(want)
    }
  })

  it('2,000 mutated documents and certificates are refused with AttestationError, never a crash or a pass', async () => {
    const rnd = seededRandom(19)
    const parsed = decodeDocument(doc)
    for (let i = 0; i < 2000; i++) {
      const copy = { ...parsed, ekCertificates: [...parsed.ekCertificates!] }
      const pick = i % 5
      if (pick === 0) copy.ekCertificates[0] = mutate(ekDer, rnd)
      else if (pick === 1) copy.ekCertificates[1] = mutate(intermediateDer, rnd)
      else if (pick === 2) copy.activationProof = mutate(proof, rnd)
      else if (pick === 3) copy.akPub = mutate(parsed.akPub, rnd)
      const input = pick === 4 ? mutate(doc, rnd) : encodeDocument(copy)
      const accepted = await validator.validate(input, nonce, expected).then(
        () => true,
        (err: unknown) => {
          if (err instanceof AttestationError) return false
          throw new Error(`iteration ${i}: unexpected ${String(err)}`, { cause: err })
        },
      )
      if (!accepted) continue
      // only an input that decodes to the same evidence may pass (a mutation may change nothing)
      const got = decodeDocument(input)
      const same =
        got.akPub.equals(parsed.akPub) &&
        got.activationProof?.equals(proof) === true &&
        got.ekCertificates?.length === 2 &&
        got.ekCertificates.every((c, j) => c.equals(parsed.ekCertificates![j]!))
      if (!same) throw new Error(`iteration ${i}: a changed document was accepted: ${input.toString()}`)
    }
  })

  it('1,000 mutated activation requests give a challenge or AttestationError, never a crash', async () => {
    const rnd = seededRandom(0x19)
    const req = decodeActivationRequest(request)
    const outcomes = { challenged: 0, refused: 0 }
    for (let i = 0; i < 1000; i++) {
      const pick = i % 3
      const input =
        pick === 0
          ? mutate(request, rnd)
          : pick === 1
            ? encodeActivationRequest({ ...req, ekCertificates: [mutate(ekDer, rnd)] })
            : encodeActivationRequest({ ...req, akPub: mutate(req.akPub, rnd) })
      try {
        await validator.challengeActivation(input)
        outcomes.challenged++
      } catch (err: unknown) {
        if (!(err instanceof AttestationError))
          throw new Error(`iteration ${i}: unexpected ${String(err)}`, { cause: err })
        outcomes.refused++
      }
    }
    // a changed AK key still gets a challenge (activation then fails in the TPM); most inputs are refused
    expect(outcomes.refused, JSON.stringify(outcomes)).to.be.greaterThan(700)
  })
})
