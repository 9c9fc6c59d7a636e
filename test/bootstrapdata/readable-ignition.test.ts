import { expect } from '../support/chai.js'
import { compactIgnition, readableIgnition } from './readable-ignition.js'

const doc = (config: unknown) => `${JSON.stringify(config)}\n`
const percent = (s: string) => `data:,${encodeURIComponent(s)}`
const base64 = (b: Buffer | string) => `data:;base64,${Buffer.from(b).toString('base64')}`

const cases: Record<string, { config: unknown; shown: unknown }> = {
  'a percent-encoded file source is shown as lines': {
    config: { storage: { files: [{ path: '/a', contents: { source: percent('a b\n') } }] } },
    shown: {
      storage: { files: [{ path: '/a', contents: { source: { dataUrl: 'percent', text: ['a b', ''] } } }] },
    },
  },
  'a base64 file source is shown as lines, and so is an append source': {
    config: { storage: { files: [{ path: '/a', append: [{ source: base64('x\ny') }] }] } },
    shown: {
      storage: { files: [{ path: '/a', append: [{ source: { dataUrl: 'base64', text: ['x', 'y'] } }] }] },
    },
  },
  'bytes that are not UTF-8 stay encoded': {
    config: { storage: { files: [{ path: '/b', contents: { source: base64(Buffer.from([0xff, 0x00])) } }] } },
    shown: { storage: { files: [{ path: '/b', contents: { source: base64(Buffer.from([0xff, 0x00])) } }] } },
  },
  'a unit body is shown as lines; other URLs stay as they are': {
    config: {
      ignition: { config: { replace: { source: 'https://s3.example/b/k' } } },
      systemd: { units: [{ name: 'a.service', contents: '[Unit]\n' }] },
    },
    shown: {
      ignition: { config: { replace: { source: 'https://s3.example/b/k' } } },
      systemd: { units: [{ name: 'a.service', contents: { text: ['[Unit]', ''] } }] },
    },
  },
}

describe('readable Ignition goldens', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(`${name}, and compacts back to the same bytes`, () => {
      const readable = readableIgnition(doc(tc.config))
      expect(JSON.parse(readable)).to.deep.equal(tc.shown)
      expect(compactIgnition(readable)).to.equal(doc(tc.config))
    })
  }

  it('a source encoded differently from the golden does not compact back to it', () => {
    const readable = readableIgnition(doc({ storage: { files: [{ contents: { source: percent('x') } }] } }))
    const other = doc({ storage: { files: [{ contents: { source: base64('x') } }] } })
    expect(readableIgnition(other)).to.not.equal(readable)
    expect(compactIgnition(readable)).to.not.equal(other)
  })
})
