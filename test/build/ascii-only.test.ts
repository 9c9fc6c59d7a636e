/**
 * scripts/ascii-only.ts: the bundles bin/code-cache.js loads are ASCII, so that V8 holds their source
 * as a one-byte string; the escapes that make them so change nothing the code does.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import vm from 'node:vm'
import { asciiOnly } from '../../scripts/ascii-only.js'
import { expect } from '../support/chai.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

describe('bundles are ASCII (scripts/ascii-only.ts)', () => {
  for (const entry of ['init-run', 'bootstrap-run', 'service-run', 'mini-run'])
    it(`dist/${entry}.cjs holds no byte above 0x7f`, async () => {
      const bytes = await readFile(path.join(ROOT, `dist/${entry}.cjs`))
      const at = bytes.findIndex((b) => b > 0x7f)
      expect(at, at < 0 ? '' : bytes.subarray(Math.max(0, at - 40), at + 10).toString()).to.equal(-1)
    })

  it('escapes comments, patterns and strings to the same meaning', () => {
    const source = [
      '/** a → b ‖ c … */',
      'const units = /^(ns|µs|μs|ms)$/', // µ is U+00B5, μ U+03BC
      'const face = /^😀$/u', // one code point, two UTF-16 units
      'const pair = /^😀$/', // two units without the u flag
      'const arrow = "→"',
      ';({ micro: units.test("μs") && units.exec("µs") !== null, face: face.test("😀"), pair: pair.test("😀"),',
      '   notHalf: face.test("\\ud83d"), arrow, template: `›${arrow}` })',
    ].join('\n')
    const escaped = asciiOnly(source)
    expect([...escaped].every((c) => c.charCodeAt(0) < 0x80)).to.be.true
    const run = (code: string): unknown => vm.runInNewContext(code)
    expect(run(escaped)).to.deep.equal(run(source))
    expect(run(escaped)).to.deep.equal({
      micro: true,
      face: true,
      pair: true,
      notHalf: false,
      arrow: '→',
      template: '›→',
    })
  })
})
