import { createHash, randomBytes } from 'node:crypto'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { createLogger } from '../../src/lib/system/index.js'
import { extendPcr, readPcrs } from '../../src/lib/tpm/index.js'
import {
  AttestationError,
  clusterIdPcrValue,
  compareMeasurements,
  createIssuer,
  createValidator,
  measurementsFromConfig,
  type Measurements,
} from '../../src/lib/attestation/index.js'
import { ExitCode } from '../../src/lib/errors/index.js'
import { decodeDocument, encodeDocument } from '../../src/lib/attestation/document.js'
import { parseOrRefuse, qualifyingData } from '../../src/lib/attestation/vtpm-quote.js'
import {
  objectName,
  TPM_ALG,
  TPMA_OBJECT,
  TpmParseError,
  withAttestationKey,
  withTpm,
} from '../../src/lib/tpm/index.js'
import { runCommand } from '../../src/lib/tpm/commands.js'
import { TpmWriter } from '../../src/lib/tpm/buffer.js'
import { marshalPcrSelection, readSignature } from '../../src/lib/tpm/structures.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()
const ALL = Array.from({ length: 24 }, (_, i) => i)

async function measurementsOf(tpm: SwtpmHandle, indices = [4, 8, 9, 11, 12, 13, 15]): Promise<Measurements> {
  const pcrs = await readPcrs(tpm.open, indices)
  return new Map(indices.map((i) => [i, { expected: pcrs.get(i) ?? Buffer.alloc(32), warnOnly: false }]))
}

function editDocument(
  doc: Buffer,
  edit: (json: {
    Attestation: {
      ak_pub: string
      quotes: Array<{ raw_sig: string; quote: string; pcrs: { pcrs: Record<string, string> } }>
    }
    UserData: string
  }) => void,
): Buffer {
  const json = JSON.parse(doc.toString()) as Parameters<typeof edit>[0]
  edit(json)
  return Buffer.from(JSON.stringify(json))
}

/** The document with its AK's object attributes changed; the key itself (and so the signature) stays valid. */
function withAkAttributes(doc: Buffer, edit: (attributes: number) => number): Buffer {
  const d = decodeDocument(doc)
  const akPub = Buffer.from(d.akPub)
  // TPMT_PUBLIC: type (2), nameAlg (2), objectAttributes (4)
  akPub.writeUInt32BE(edit(akPub.readUInt32BE(4)) >>> 0, 4)
  return encodeDocument({ ...d, akPub })
}

/**
 * The document with its quote replaced by one the same AK signs over other PCR banks: a genuine TPM
 * quote, bound to the nonce, whose selection is not the one SHA-256 bank the document reports.
 */
async function requoted(
  tpm: SwtpmHandle,
  doc: Buffer,
  nonce: Buffer,
  banks: Array<{ hashAlg: number; pcrs: number[] }>,
): Promise<Buffer> {
  const d = decodeDocument(doc)
  const { quote, rawSig } = await withTpm(tpm.open, (t) =>
    withAttestationKey(t, async (ak) => {
      const w = new TpmWriter().sized(qualifyingData(d.userData, nonce)).u16(TPM_ALG.NULL)
      marshalPcrSelection(w, banks)
      const { params } = await runCommand(t, {
        name: 'Quote',
        handles: [ak.handle],
        authorized: 1,
        params: w.toBuffer(),
      })
      const quoted = Buffer.from(params.sized('quoted'))
      const start = params.position
      readSignature(params)
      return { quote: quoted, rawSig: Buffer.from(params.since(start)) }
    }),
  )
  const [entry] = d.quotes
  if (!entry) throw new Error('issued document has no quote')
  return encodeDocument({ ...d, quotes: [{ ...entry, quote, rawSig }] })
}

describe('qemu-vtpm attestation against swtpm', function () {
  let tpm: SwtpmHandle
  let other: SwtpmHandle | undefined
  const userData = sha256(Buffer.from('tls key'))
  const nonce = randomBytes(32)
  beforeEach(async () => (tpm = await startSwtpm()))
  afterEach(async () => {
    await tpm.stop()
    await other?.stop()
    other = undefined
  })

  it('round trip: the validator returns userData and all 24 SHA-256 PCRs', async () => {
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    const got = await createValidator('qemu-vtpm', await measurementsOf(tpm)).validate(doc, nonce)
    expect(got.userData).to.deep.equal(userData)
    expect([...got.pcrs.keys()]).to.deep.equal(ALL)
    expect(got.pcrs).to.deep.equal(await readPcrs(tpm.open, ALL))
    expect(got.warnings).to.deep.equal([])
    const parsed = decodeDocument(doc)
    expect(parsed.instanceInfo).to.equal(undefined)
    expect(JSON.parse(doc.toString())).to.have.keys('Attestation', 'InstanceInfo', 'UserData')
    // the AK's Name is what a service records to know this TPM again
    expect(got.akName).to.deep.equal(objectName(parsed.akPub))
    expect(got.eventLog).to.equal(undefined)
    expect(Object.keys(got)).not.to.include('eventLog')
  })

  it('names its variant and OID on both sides', () => {
    for (const side of [createIssuer('qemu-vtpm', tpm.open), createValidator('qemu-vtpm', new Map())])
      expect([side.variant, side.oid]).to.deep.equal(['qemu-vtpm', '1.3.9900.5.1'])
  })

  it('accepts a genuine quote whose selection also names an empty bank', async () => {
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    const requotedDoc = await requoted(tpm, doc, nonce, [
      { hashAlg: TPM_ALG.SHA256, pcrs: ALL },
      { hashAlg: TPM_ALG.SHA1, pcrs: [] },
    ])
    const got = await createValidator('qemu-vtpm', await measurementsOf(tpm)).validate(requotedDoc, nonce)
    expect(got.userData).to.deep.equal(userData)
  })

  it('names every enforced mismatch, one a line, in ascending PCR order', async () => {
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    const m = new Map([13, 9, 4].map((i) => [i, { expected: Buffer.alloc(32, i), warnOnly: false }]))
    const pcrs = await readPcrs(tpm.open, [4, 9, 13])
    const line = (i: number) => `untrusted measurement value ${pcrs.get(i)!.toString('hex')} at index ${i}`
    const err = await createValidator('qemu-vtpm', m)
      .validate(doc, nonce)
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(err).to.be.instanceOf(AttestationError)
    expect((err as Error).message).to.equal(
      `measurement validation failed:\n${line(4)}\n${line(9)}\n${line(13)}`,
    )
    expect(compareMeasurements(m, pcrs).errors).to.deep.equal([line(4), line(9), line(13)])
  })

  it('refuses a verifier that expects credential activation: qemu-vtpm cannot prove one', async () => {
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    const err = await createValidator('qemu-vtpm', await measurementsOf(tpm))
      .validate(doc, nonce, { secret: randomBytes(32), akName: objectName(decodeDocument(doc).akPub) })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(err).to.be.instanceOf(AttestationError)
    expect((err as Error).message).to.equal(
      'qemu-vtpm attestation cannot prove credential activation, which this verifier expects',
    )
  })

  it('keeps the TPM structure error as the cause of a malformed-field refusal', async () => {
    const doc = editDocument(
      await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce),
      (j) => (j.Attestation.ak_pub = Buffer.from('garbage').toString('base64')),
    )
    const err = await createValidator('qemu-vtpm', new Map())
      .validate(doc, nonce)
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(err).to.be.instanceOf(AttestationError)
    expect((err as Error).cause).to.be.instanceOf(TpmParseError)
  })

  it('returns warn-only mismatches without a logger', async () => {
    const m = measurementsFromConfig({ '9': { expected: 'ab'.repeat(32), warnOnly: true } })
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    const got = await createValidator('qemu-vtpm', m).validate(doc, nonce)
    expect(got.warnings).to.have.length(1)
  })

  it('accepts PCR 15 = clusterIdPcrValue after the node extended it with SHA256(clusterID)', async () => {
    const clusterId = randomBytes(32)
    await extendPcr(tpm.open, 15, sha256(clusterId))
    const m = await measurementsOf(tpm, [4])
    m.set(15, { expected: clusterIdPcrValue(clusterId), warnOnly: false })
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    await createValidator('qemu-vtpm', m).validate(doc, nonce)
  })

  const refusals: Record<
    string,
    {
      prepare: (ctx: {
        doc: Buffer
        tpm: SwtpmHandle
        m: Measurements
        otherDoc: () => Promise<Buffer>
      }) => Promise<{ doc: Buffer; nonce?: Buffer }>
      want: RegExp
    }
  > = {
    'a replayed document (other nonce)': {
      prepare: async ({ doc }) => ({ doc, nonce: randomBytes(32) }),
      want: /not bound to this nonce.*replayed/,
    },
    'a document whose userData was swapped': {
      prepare: async ({ doc }) => ({
        doc: editDocument(doc, (j) => (j.UserData = sha256(Buffer.from('x')).toString('base64'))),
      }),
      want: /not bound to this nonce and key/,
    },
    'an enforced PCR that changed on the node': {
      prepare: async ({ tpm }) => {
        await extendPcr(tpm.open, 9, sha256(Buffer.from('evil kernel')))
        return { doc: await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce) }
      },
      want: /measurement validation failed:\nuntrusted measurement value [0-9a-f]{64} at index 9$/,
    },
    'a reported PCR value edited after quoting': {
      prepare: async ({ doc }) => ({
        doc: editDocument(
          doc,
          (j) => (j.Attestation.quotes[0]!.pcrs.pcrs['4'] = Buffer.alloc(32, 1).toString('base64')),
        ),
      }),
      want: /quoted PCR digest does not match the reported PCR values/,
    },
    'a tampered signature': {
      prepare: async ({ doc }) => ({
        doc: editDocument(doc, (j) => {
          const sig = Buffer.from(j.Attestation.quotes[0]!.raw_sig, 'base64')
          sig[sig.length - 1]! ^= 0x01
          j.Attestation.quotes[0]!.raw_sig = sig.toString('base64')
        }),
      }),
      want: /bad signature/,
    },
    "a swapped AK (another TPM's key)": {
      prepare: async ({ doc, otherDoc }) => {
        const foreign = decodeDocument(await otherDoc())
        return { doc: editDocument(doc, (j) => (j.Attestation.ak_pub = foreign.akPub.toString('base64'))) }
      },
      want: /bad signature.*swapped AK/,
    },
    'a quote from another TPM with its own AK and our nonce but other PCRs': {
      prepare: async ({ otherDoc }) => ({ doc: await otherDoc() }),
      want: /untrusted measurement value [0-9a-f]{64} at index 4/,
    },
    'a missing expected PCR': {
      prepare: async ({ doc }) => ({
        doc: editDocument(doc, (j) => delete j.Attestation.quotes[0]!.pcrs.pcrs['13']),
      }),
      want: /quoted PCR selection .* does not match the reported PCRs/,
    },
    'an ak_pub that is not a TPMT_PUBLIC': {
      prepare: async ({ doc }) => ({
        doc: editDocument(doc, (j) => (j.Attestation.ak_pub = Buffer.from('garbage').toString('base64'))),
      }),
      want: /^malformed attestation document: Attestation\.ak_pub: /,
    },
    'a raw_sig that is not a TPMT_SIGNATURE': {
      prepare: async ({ doc }) => ({
        doc: editDocument(
          doc,
          (j) => (j.Attestation.quotes[0]!.raw_sig = Buffer.from([1, 2, 3]).toString('base64')),
        ),
      }),
      want: /^malformed attestation document: raw_sig: /,
    },
    'a signature that claims SHA-1': {
      prepare: async ({ doc }) => ({
        doc: editDocument(doc, (j) => {
          const sig = Buffer.from(j.Attestation.quotes[0]!.raw_sig, 'base64')
          sig.writeUInt16BE(TPM_ALG.SHA1, 2) // TPMT_SIGNATURE: sigAlg, then the hash
          j.Attestation.quotes[0]!.raw_sig = sig.toString('base64')
        }),
      }),
      want: /^malformed attestation document: raw_sig: TPMT_SIGNATURE: hash algorithm 0x4 is not accepted$/,
    },
    'a quote labelled with another bank than SHA-256': {
      prepare: async ({ doc }) => {
        const d = decodeDocument(doc)
        return {
          doc: encodeDocument({ ...d, quotes: d.quotes.map((q) => ({ ...q, hashAlg: TPM_ALG.SHA1 })) }),
        }
      },
      want: /^attestation has no quote over the SHA-256 PCR bank$/,
    },
    'a genuine quote over no PCRs at all': {
      prepare: async ({ doc, tpm }) => ({
        doc: await requoted(tpm, doc, nonce, [{ hashAlg: TPM_ALG.SHA256, pcrs: [] }]),
      }),
      want: /^quoted PCR selection \[\] does not match the reported PCRs \[0,1,.*,23\]$/,
    },
    // only a restricted key guarantees that the TPM itself built what it signed
    'an AK that is not restricted (its signature still verifies)': {
      prepare: async ({ doc }) => ({ doc: withAkAttributes(doc, (a) => a & ~TPMA_OBJECT.restricted) }),
      want: /^attestation key is not a restricted signing key$/,
    },
    'an AK that is not a signing key': {
      prepare: async ({ doc }) => ({ doc: withAkAttributes(doc, (a) => a & ~TPMA_OBJECT.sign) }),
      want: /^attestation key is not a restricted signing key$/,
    },
    'a genuine quote over the SHA-1 bank reported as SHA-256': {
      prepare: async ({ doc, tpm }) => ({
        doc: await requoted(tpm, doc, nonce, [{ hashAlg: TPM_ALG.SHA1, pcrs: ALL }]),
      }),
      want: /^quoted PCR selection \[0,1,.*,23\] does not match the reported PCRs \[0,1,.*,23\]$/,
    },
    'a genuine quote over two banks': {
      prepare: async ({ doc, tpm }) => ({
        doc: await requoted(tpm, doc, nonce, [
          { hashAlg: TPM_ALG.SHA256, pcrs: ALL },
          { hashAlg: TPM_ALG.SHA1, pcrs: [0] },
        ]),
      }),
      want: /^quoted PCR selection \[0,1,.*,23\] does not match the reported PCRs \[0,1,.*,23\]$/,
    },
  }
  for (const [name, tc] of Object.entries(refusals)) {
    it(`refuses ${name}`, async () => {
      const m = await measurementsOf(tpm)
      const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
      const otherDoc = async () => {
        other = await startSwtpm()
        await extendPcr(other.open, 4, sha256(Buffer.from('other firmware')))
        return createIssuer('qemu-vtpm', other.open).issue(userData, nonce)
      }
      const prepared = await tc.prepare({ doc, tpm, m, otherDoc })
      const err = await createValidator('qemu-vtpm', m)
        .validate(prepared.doc, prepared.nonce ?? nonce)
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(err).to.be.instanceOf(AttestationError)
      expect((err as AttestationError).message).to.match(tc.want)
      expect((err as AttestationError).exitCode).to.equal(ExitCode.AttestationFailed)
    })
  }

  it('warn-only mismatches become warnings (logged), not errors; missing values are named', async () => {
    const lines: string[] = []
    const m = measurementsFromConfig({
      '9': { expected: 'ab'.repeat(32), warnOnly: true },
      '4': { expected: (await readPcrs(tpm.open, [4])).get(4)!.toString('hex'), warnOnly: false },
    })
    const doc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    const got = await createValidator('qemu-vtpm', m, createLogger({ write: (l) => lines.push(l) })).validate(
      doc,
      nonce,
    )
    expect(got.warnings).to.have.length(1)
    expect(got.warnings[0]).to.match(/^Encountered untrusted measurement value [0-9a-f]{64} at index 9$/)
    expect(lines.join('\n')).to.include('at index 9')
  })

  it('keeps the AK stable across issues and encodes/decodes losslessly', async () => {
    const a = decodeDocument(await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce))
    const b = decodeDocument(await createIssuer('qemu-vtpm', tpm.open).issue(userData, randomBytes(32)))
    expect(a.akPub).to.deep.equal(b.akPub)
    expect(decodeDocument(encodeDocument(a))).to.deep.equal(a)
  })
})

describe('parseOrRefuse', () => {
  it('names the field of a TPM structure that does not parse, keeping the parse error as the cause', () => {
    const parseError = new TpmParseError('truncated TPM2B')
    expect(() =>
      parseOrRefuse(
        () => {
          throw parseError
        },
        'AkPub',
        'activation request',
      ),
    )
      .to.throw(AttestationError, 'malformed activation request: AkPub: truncated TPM2B')
      .with.property('cause', parseError)
  })

  it('lets any other error through unchanged: only a parse error is a malformed document', () => {
    const bug = new TypeError('not a parse error')
    expect(() =>
      parseOrRefuse(() => {
        throw bug
      }, 'Attestation.ak_pub'),
    ).to.throw(TypeError, 'not a parse error')
    let thrown: unknown
    try {
      parseOrRefuse(() => {
        throw bug
      }, 'Attestation.ak_pub')
    } catch (err) {
      thrown = err
    }
    expect(thrown).to.equal(bug)
  })
})
