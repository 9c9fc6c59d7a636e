import { createHash } from 'node:crypto'
import { expect } from '../support/chai.js'
import {
  clusterIdPcrValue,
  compareMeasurements,
  requireMeasurements,
  measurementsFromConfig,
  CLUSTER_ID_PCR,
} from '../../src/lib/attestation/index.js'
import { validatorForConfig, type ClusterConfig } from '../../src/lib/config/index.js'

const hex = (byte: number) => Buffer.alloc(32, byte).toString('hex')

describe('measurements', () => {
  const expected = measurementsFromConfig({
    '4': { expected: hex(4), warnOnly: false },
    '14': { expected: hex(14), warnOnly: true },
    '15': { expected: hex(0), warnOnly: false },
  })
  const cases: Record<string, { actual: Array<[number, number]>; errors: string[]; warnings: string[] }> = {
    'all equal, extra PCRs ignored': {
      actual: [
        [4, 4],
        [14, 14],
        [15, 0],
        [9, 9],
      ],
      errors: [],
      warnings: [],
    },
    'enforced mismatch names value and index': {
      actual: [
        [4, 5],
        [14, 14],
        [15, 0],
      ],
      errors: [`untrusted measurement value ${hex(5)} at index 4`],
      warnings: [],
    },
    'missing enforced value': {
      actual: [
        [4, 4],
        [14, 14],
      ],
      errors: ['missing measurement value for index 15'],
      warnings: [],
    },
    'warn-only mismatch is a warning': {
      actual: [
        [4, 4],
        [14, 1],
        [15, 0],
      ],
      errors: [],
      warnings: [`Encountered untrusted measurement value ${hex(1)} at index 14`],
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const actual = new Map(tc.actual.map(([i, b]) => [i, Buffer.alloc(32, b)]))
      expect(compareMeasurements(expected, actual)).to.deep.equal({
        errors: tc.errors,
        warnings: tc.warnings,
      })
    })
  }

  it('clusterIdPcrValue is SHA256(0^32 ‖ SHA256(clusterID)) on PCR 15', () => {
    const id = Buffer.from('00112233', 'hex')
    const inner = createHash('sha256').update(id).digest()
    expect(clusterIdPcrValue(id)).to.deep.equal(
      createHash('sha256')
        .update(Buffer.concat([Buffer.alloc(32), inner]))
        .digest(),
    )
    expect(CLUSTER_ID_PCR).to.equal(15)
  })

  it('a validator with no measurements is refused: it would trust any node', () => {
    expect(() => requireMeasurements(new Map())).to.throw(/no measurements .* refusing to trust any node/)
    const config = { attestation: { qemuVTPM: { measurements: {} } } } as unknown as ClusterConfig
    expect(() => validatorForConfig(config)).to.throw(/refusing to trust any node/)
    expect(() => validatorForConfig({ attestation: {} } as unknown as ClusterConfig)).to.throw(
      /refusing to trust any node/,
    )
  })
})
