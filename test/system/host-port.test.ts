import { expect } from '../support/chai.js'
import { formatHostPort, isHostPort, parseHostPort } from '../../src/lib/system/index.js'
import { type HostPort } from '../../src/lib/system/host-port.js'
import { type ParseHostPortOptions } from '../../src/lib/system/host-port.js'

describe('host:port', () => {
  const cases: Record<
    string,
    { text: string; opts?: ParseHostPortOptions; want?: HostPort; wantErr?: string }
  > = {
    'IPv4 alone': { text: '10.0.0.1', want: { host: '10.0.0.1' } },
    'IPv4 with a port': { text: '0.0.0.0:9000', want: { host: '0.0.0.0', port: 9000 } },
    'a DNS name with a port': {
      text: 'node-1.example.com:443',
      want: { host: 'node-1.example.com', port: 443 },
    },
    'bracketed IPv6 with a port': { text: '[::1]:30081', want: { host: '::1', port: 30081 } },
    'bracketed IPv6 alone': { text: '[fd00::1]', want: { host: 'fd00::1' } },
    'the highest port': { text: 'h:65535', want: { host: 'h', port: 65535 } },
    'leading zeros are still decimal': { text: 'h:0080', want: { host: 'h', port: 80 } },
    'port 0 where the system may pick one': {
      text: '127.0.0.1:0',
      opts: { allowPortZero: true },
      want: { host: '127.0.0.1', port: 0 },
    },
    'bare IPv6 when asked for': { text: 'fd00::5', opts: { allowBareIpv6: true }, want: { host: 'fd00::5' } },
    'bare IPv6 otherwise': { text: 'fd00::5', wantErr: '"fd00::5" is not HOST or HOST:PORT: stray colons' },
    'a missing port when one is required': {
      text: 'nohost',
      opts: { requirePort: true },
      wantErr: '"nohost" is not HOST:PORT: the port is missing',
    },
    'port 0': { text: 'host:0', wantErr: 'the port must be a decimal number from 1 to 65535' },
    'a port above 65535': { text: 'host:99999', wantErr: 'from 1 to 65535' },
    'a hexadecimal port': { text: 'host:0x50', wantErr: 'the port must be a decimal number' },
    'an empty port': { text: 'host:', wantErr: 'the port must be a decimal number' },
    'a URL': { text: 'http://x', wantErr: '"http://x" is not HOST or HOST:PORT' },
    'an empty host': { text: ':9000', wantErr: '"" is not an IP address or DNS name' },
    nothing: { text: '', wantErr: 'is not an IP address or DNS name' },
    'a space in the host': { text: 'a b', wantErr: '"a b" is not an IP address or DNS name' },
    'IPv4 in brackets': { text: '[10.0.0.1]:80', wantErr: '"10.0.0.1" in brackets is not an IPv6 address' },
    'an unclosed bracket': { text: '::1]:x', wantErr: 'stray colons or brackets' },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      if (tc.wantErr) {
        expect(() => parseHostPort(tc.text, tc.opts)).to.throw(tc.wantErr)
        expect(isHostPort(tc.text, tc.opts)).to.equal(false)
      } else {
        expect(parseHostPort(tc.text, tc.opts)).to.deep.equal(tc.want)
        expect(isHostPort(tc.text, tc.opts)).to.equal(true)
      }
    })
  }

  const formats: Record<string, { host: string; port?: number; want: string }> = {
    'IPv4 with a port': { host: '10.0.0.1', port: 9000, want: '10.0.0.1:9000' },
    'IPv6 gets brackets': { host: '::1', port: 9000, want: '[::1]:9000' },
    'IPv6 alone gets brackets too (a URL host)': { host: 'fd00::1', want: '[fd00::1]' },
    'a name alone': { host: 'node.example', want: 'node.example' },
  }
  for (const [name, tc] of Object.entries(formats)) {
    it(`formats ${name}`, () => expect(formatHostPort(tc.host, tc.port)).to.equal(tc.want))
  }

  it('formatting then parsing gives the same host and port', () => {
    for (const hp of [{ host: '::1', port: 1 }, { host: 'a.b', port: 65535 }, { host: '192.0.2.1' }])
      expect(parseHostPort(formatHostPort(hp.host, hp.port))).to.deep.equal(hp)
  })
})
