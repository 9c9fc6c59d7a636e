import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { hex, opensslKeyPair } from '../support/signed-measurements.js'
import { applyMeasurementsUpdate, type MeasurementUpdate } from '../../src/lib/config/measurements-update.js'
import { planSignedMeasurementsUpdate } from '../../src/lib/config/signed-measurements.js'
import { validateWorkspace } from '../../src/lib/config/validate.js'
import { entryForVariant, parseMeasurementsDocument } from '../../src/lib/measurements/document.js'
import { MeasurementsRefusedError } from '../../src/lib/measurements/refusal.js'

const head =
  'version: v4\nname: c\nkubernetesVersion: v1.31.13\nattestation:\n  qemuVTPM:\n    measurements:\n'
const add = (index: number, byte: number): MeasurementUpdate => ({
  index,
  current: null,
  node: hex(byte),
  next: hex(byte),
  warnOnly: true,
})

describe("Constellation's measurements JSON", () => {
  const m = { 4: { expected: hex(1), warnOnly: false } }
  const cases: Record<string, { doc: unknown; want: RegExp }> = {
    'not JSON': { doc: '{', want: /is not JSON/ },
    'no attestationVariant': {
      doc: { csp: 'QEMU', image: 'v1', measurements: m },
      want: /attestationVariant must be/,
    },
    'no image': {
      doc: { csp: 'QEMU', attestationVariant: 'qemu-vtpm', measurements: m },
      want: /image must be/,
    },
    'a PCR index out of range': {
      doc: { csp: 'QEMU', attestationVariant: 'qemu-vtpm', image: 'v1', measurements: { 24: m[4] } },
      want: /measurements\.24: "24" is not a PCR index/,
    },
    'no warnOnly': {
      doc: {
        csp: 'QEMU',
        attestationVariant: 'qemu-vtpm',
        image: 'v1',
        measurements: { 4: { expected: hex(1) } },
      },
      want: /measurements\.4\.warnOnly must be true or false/,
    },
    'an empty envelope list': {
      doc: { version: 'v1', ref: '-', stream: 'stable', list: [] },
      want: /list must be/,
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`refuses ${name}, naming where`, () => {
      const bytes = Buffer.from(typeof tc.doc === 'string' ? tc.doc : JSON.stringify(tc.doc))
      expect(() => parseMeasurementsDocument(bytes, 'm.json'))
        .to.throw(MeasurementsRefusedError, tc.want)
        .with.property('reason', 'document')
    })

  it('reads the v2 envelope and picks the entry of a variant', () => {
    const doc = parseMeasurementsDocument(
      Buffer.from(
        JSON.stringify({
          version: 'v2.1.0',
          ref: 'main',
          stream: 'nightly',
          list: [{ csp: 'AWS', attestationVariant: 'aws-sev-snp', measurements: m }],
        }),
      ),
      'm.json',
    )
    expect(doc.image).to.equal('ref/main/stream/nightly/v2.1.0')
    expect(entryForVariant(doc, 'aws-sev-snp', 'm.json').measurements.get(4)?.expected).to.equal(hex(1))
    expect(() => entryForVariant(doc, 'qemu-vtpm', 'm.json')).to.throw(
      /for aws-sev-snp, not for this workspace's variant qemu-vtpm/,
    )
  })

  it("refuses 48-byte values (TDX registers) for the config's 32-byte PCRs", () => {
    const doc = parseMeasurementsDocument(
      Buffer.from(
        JSON.stringify({
          csp: 'QEMU',
          attestationVariant: 'qemu-tdx',
          image: 'v1',
          measurements: { 0: { expected: 'ab'.repeat(48), warnOnly: false } },
        }),
      ),
      'm.json',
    )
    expect(() => planSignedMeasurementsUpdate({}, doc.entries[0]!, 'm.json')).to.throw(
      /measurement 0 is 48 bytes/,
    )
  })
})

describe('adding PCRs to constellation-conf.yaml', () => {
  it('inserts in index order in the block layout, unquoted keys staying unquoted', () => {
    const text = `${head}      4:\n          expected: '${hex(0)}'\n          warnOnly: false\n      # kernel\n      9:\n          expected: '${hex(0)}'\n          warnOnly: false\n`
    const out = applyMeasurementsUpdate(text, 'c.yaml', [add(1, 1), add(7, 7), add(12, 12)])
    expect(out).to.equal(
      `${head}      1:\n          expected: "${hex(1)}"\n          warnOnly: true\n      4:\n          expected: '${hex(0)}'\n          warnOnly: false\n` +
        `      7:\n          expected: "${hex(7)}"\n          warnOnly: true\n      # kernel\n      9:\n          expected: '${hex(0)}'\n          warnOnly: false\n` +
        `      12:\n          expected: "${hex(12)}"\n          warnOnly: true\n`,
    )
  })

  it('adds after a flow-style entry and its comment, in block style', () => {
    const text = `${head}      "4": { expected: "${hex(0)}", warnOnly: false }   # kernel\n      "9": { expected: "${hex(0)}", warnOnly: true }\n`
    const out = applyMeasurementsUpdate(text, 'c.yaml', [add(7, 7)])
    expect(out).to.equal(
      `${head}      "4": { expected: "${hex(0)}", warnOnly: false }   # kernel\n      "7":\n        expected: "${hex(7)}"\n        warnOnly: true\n      "9": { expected: "${hex(0)}", warnOnly: true }\n`,
    )
  })

  it('refuses a flow-style measurements map, naming the PCR', () => {
    const text = `${head}      { "4": { expected: "${hex(0)}", warnOnly: false } }\n`
    expect(() => applyMeasurementsUpdate(text, 'c.yaml', [add(7, 7)])).to.throw(
      /must be a block map to add PCR 7/,
    )
  })

  it('config validate names a measurementsPublicKey that is not P-256', async () => {
    const tmp = await makeTempDir()
    try {
      const key = opensslKeyPair(tmp.dir, 'p384', 'secp384r1')
      await writeFile(
        path.join(tmp.dir, 'constellation-conf.yaml'),
        `${head}      "4": { expected: "${hex(0)}", warnOnly: false }\nmeasurementsPublicKey: ${path.basename(key.pub)}\n`,
      )
      const result = await validateWorkspace(tmp.dir)
      expect(result.valid).to.equal(false)
      const problems = result.files[0]?.problems ?? []
      expect(problems.map((p) => [p.path, p.line])).to.deep.equal([['measurementsPublicKey', 8]])
      expect(problems[0]?.message).to.contain('secp384r1 public key, not ECDSA P-256')
    } finally {
      await tmp.cleanup()
    }
  })
})
