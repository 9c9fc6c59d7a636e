import { expect } from '../support/chai.js'
import { startSwtpm } from '../support/swtpm.js'
import { createIssuer } from '../../src/lib/attestation/index.js'
import {
  decodeDocument,
  encodeDocument,
  type AttestationDocument,
} from '../../src/lib/attestation/document.js'

const fixed: AttestationDocument = {
  akPub: Buffer.from('ak public area'),
  quotes: [
    {
      quote: Buffer.from('quote'),
      rawSig: Buffer.from('sig'),
      hashAlg: 11,
      pcrs: new Map([
        [0, Buffer.alloc(32, 1)],
        [15, Buffer.alloc(32)],
      ]),
    },
  ],
  eventLog: Buffer.from('event log'),
  userData: Buffer.alloc(32, 0xab),
}

// What encodeDocument wrote before tpm-ek existed (a163248), for the same input: Constellation's
// nodes and validators read these bytes, so they must not move.
const BEFORE_TPM_EK = [
  '{"Attestation":{"ak_pub":"YWsgcHVibGljIGFyZWE=","quotes":[{"quote":"cXVvdGU=","raw_sig":"c2ln","pcrs":{"hash":11,"pcrs":{"0":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","15":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}}],"event_log":"ZXZlbnQgbG9n","TeeAttestation":null},"InstanceInfo":null,"UserData":"q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s="}',
  '{"Attestation":{"ak_pub":"YWsgcHVibGljIGFyZWE=","quotes":[{"quote":"cXVvdGU=","raw_sig":"c2ln","pcrs":{"hash":11,"pcrs":{"0":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","15":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}}],"TeeAttestation":null},"InstanceInfo":"aWk=","UserData":"q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s="}',
]

describe('attestation document encoding', () => {
  it('qemu-vtpm documents are byte-identical to the ones before tpm-ek', () => {
    expect(encodeDocument(fixed).toString()).to.equal(BEFORE_TPM_EK[0])
    const other = { ...fixed, eventLog: undefined, instanceInfo: Buffer.from('ii') }
    expect(encodeDocument(other).toString()).to.equal(BEFORE_TPM_EK[1])
    for (const text of BEFORE_TPM_EK) {
      const decoded = decodeDocument(Buffer.from(text))
      expect(decoded.ekCertificates).to.equal(undefined)
      expect(decoded.activationProof).to.equal(undefined)
      expect(encodeDocument(decoded).toString()).to.equal(text)
    }
  })

  it('tpm-ek adds its two fields after UserData, and nothing else changes', () => {
    const ekCertificates = [Buffer.from([0x30, 1]), Buffer.from([0x30, 2])]
    const got = encodeDocument({ ...fixed, ekCertificates, activationProof: Buffer.alloc(32, 7) }).toString()
    expect(got).to.equal(
      BEFORE_TPM_EK[0]!.slice(0, -1) +
        `,"EndorsementKeyCertificates":["MAE=","MAI="],"ActivationProof":"${Buffer.alloc(32, 7).toString('base64')}"}`,
    )
    expect(decodeDocument(Buffer.from(got))).to.deep.equal({
      ...fixed,
      instanceInfo: undefined,
      ekCertificates,
      activationProof: Buffer.alloc(32, 7),
    })
  })

  it("a real qemu-vtpm document decodes and encodes back to the node's bytes", async function () {
    this.timeout(30_000)
    const tpm = await startSwtpm()
    try {
      const doc = await createIssuer('qemu-vtpm', tpm.open).issue(Buffer.alloc(32, 1), Buffer.alloc(32, 2))
      expect(encodeDocument(decodeDocument(doc))).to.deep.equal(doc)
    } finally {
      await tpm.stop()
    }
  })
})
