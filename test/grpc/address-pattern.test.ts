/**
 * compileAddressPattern compiles node:net's IPv6 pattern to machine code at once by turning V8's
 * regexp tier-up off for that one compile: what it changes must be time only. Checked in a process
 * of its own, since the flag is the process's.
 */
import { execFileSync } from 'node:child_process'
import { expect } from '../support/chai.js'

const script = `
  const { isIPv6, isIP } = require('node:net')
  const { compileAddressPattern } = require(process.argv[1])
  compileAddressPattern()
  compileAddressPattern()
  const answers = ['::1', '127.0.0.1', 'fe80::1%eth0', '2001:db8::8a2e:370:7334', '1:2:3:4:5:6:7:8:9', 'node-1']
    .map((a) => [a, isIPv6(a), isIP(a)])
  // a pattern compiled afterwards behaves as before (tier-up is back on)
  const later = /^(a|b)+c$/.test('ababc') && !/^(a|b)+c$/.test('abd')
  console.log(JSON.stringify({ answers, later }))
`

describe('compileAddressPattern', () => {
  it('leaves every answer of node:net and later patterns as they were', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        script,
        new URL('../../src/lib/grpc/address-pattern.ts', import.meta.url).pathname,
      ],
      { encoding: 'utf8' },
    )
    expect(JSON.parse(out)).to.deep.equal({
      answers: [
        ['::1', true, 6],
        ['127.0.0.1', false, 4],
        ['fe80::1%eth0', true, 6],
        ['2001:db8::8a2e:370:7334', true, 6],
        ['1:2:3:4:5:6:7:8:9', false, 0],
        ['node-1', false, 0],
      ],
      later: true,
    })
  })
})
