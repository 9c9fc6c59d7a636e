import { expect } from '../support/chai.js'
import {
  claimedNodeName,
  csrProblems,
  isRfc1123Name,
  type CsrFields,
  type CsrProblem,
} from '../../src/lib/joinservice/csr-policy.js'
import { ipBytes, isLoopback, peerHost, sameIp } from '../../src/lib/joinservice/ip-address.js'

/** What an honest worker at 10.0.0.5 sends (the fields a CSR parser would extract). */
const honest: CsrFields = {
  organizations: ['system:nodes'],
  commonNames: ['system:node:worker-1'],
  key: { type: 'ec', namedCurve: 'prime256v1' },
  publicKeyDer: Buffer.from('spki'),
  dnsNames: ['worker-1'],
  ipAddresses: ['10.0.0.5'],
  signatureValid: true,
}
const PEER = '10.0.0.5'

describe('CSR policy', () => {
  const accepted: Record<string, { csr?: Partial<CsrFields>; peer?: string; expectedNodeName?: string }> = {
    'an honest P-256 request': {},
    'RSA 2048': { csr: { key: { type: 'rsa', modulusLength: 2048 } } },
    'RSA 4096': { csr: { key: { type: 'rsa', modulusLength: 4096 } } },
    'no DNS SAN': { csr: { dnsNames: [] } },
    'a dotted RFC 1123 name': {
      csr: { commonNames: ['system:node:worker-1.zone-a.example'], dnsNames: ['worker-1.zone-a.example'] },
    },
    'an IPv4 peer seen as IPv4-mapped IPv6 by a dual-stack listener': { peer: '::ffff:10.0.0.5' },
    'an IPv4-mapped IPv6 SAN for an IPv4 peer': { csr: { ipAddresses: ['::ffff:10.0.0.5'] } },
    'IPv6 written differently in SAN and peer': {
      csr: { ipAddresses: ['2001:DB8::0:1'] },
      peer: '2001:db8:0:0:0:0:0:1',
    },
    'the name the cluster expects for this node': { expectedNodeName: 'worker-1' },
    'its own loopback address from 127.0.0.1 (nodes sharing a host, mini without namespaces)': {
      csr: { ipAddresses: ['127.42.0.3'] },
      peer: '127.0.0.1',
    },
    'the IPv6 loopback address from 127.0.0.1': { csr: { ipAddresses: ['::1'] }, peer: '127.0.0.1' },
    'its own loopback address from ::1 (an IPv6-only host)': {
      csr: { ipAddresses: ['127.0.0.1'] },
      peer: '::1',
    },
    'a multi-digit IPv4-mapped SAN for its IPv4 peer': {
      csr: { ipAddresses: ['::ffff:192.168.100.200'] },
      peer: '192.168.100.200',
    },
  }
  for (const [name, tc] of Object.entries(accepted))
    it(`accepts ${name}`, () => {
      const problems = csrProblems(
        { ...honest, ...tc.csr },
        { peerAddress: tc.peer ?? PEER, expectedNodeName: tc.expectedNodeName },
      )
      expect(problems).to.deep.equal([])
    })

  const refused: Record<
    string,
    {
      csr?: Partial<CsrFields>
      peer?: string
      expectedNodeName?: string
      want: Array<Omit<CsrProblem, 'reason'> & { reason: RegExp }>
    }
  > = {
    'an extra group (system:masters)': {
      csr: { organizations: ['system:nodes', 'system:masters'] },
      want: [
        {
          field: 'subject O',
          kind: 'forbidden',
          reason: /\["system:nodes","system:masters"\]; want exactly/,
        },
      ],
    },
    'another group instead': {
      csr: { organizations: ['system:masters'] },
      want: [{ field: 'subject O', kind: 'forbidden', reason: /want exactly \["system:nodes"\]/ }],
    },
    'no O': {
      csr: { organizations: [] },
      want: [{ field: 'subject O', kind: 'invalid', reason: /^\[\]; want/ }],
    },
    'system:nodes twice': {
      csr: { organizations: ['system:nodes', 'system:nodes'] },
      want: [{ field: 'subject O', kind: 'invalid', reason: /want exactly/ }],
    },
    'a CN without the node prefix': {
      csr: { commonNames: ['worker-1'], dnsNames: [] },
      want: [
        {
          field: 'subject CN',
          kind: 'invalid',
          reason: /\["worker-1"\]; want exactly one "system:node:<node name>"/,
        },
      ],
    },
    'two CNs': {
      csr: { commonNames: ['system:node:worker-1', 'system:node:worker-2'], dnsNames: [] },
      want: [{ field: 'subject CN', kind: 'invalid', reason: /want exactly one/ }],
    },
    'an upper-case node name': {
      csr: { commonNames: ['system:node:Worker-1'], dnsNames: [] },
      want: [{ field: 'subject CN', kind: 'invalid', reason: /"Worker-1" is not an RFC 1123 name/ }],
    },
    'an empty node name': {
      csr: { commonNames: ['system:node:'], dnsNames: [] },
      want: [{ field: 'subject CN', kind: 'invalid', reason: /"" is not an RFC 1123 name/ }],
    },
    'another node’s name than the cluster knows for this address': {
      csr: { commonNames: ['system:node:control-plane-0'], dnsNames: [] },
      expectedNodeName: 'worker-1',
      want: [
        { field: 'subject CN', kind: 'forbidden', reason: /"control-plane-0"; this node is "worker-1"/ },
      ],
    },
    'ECDSA P-384': {
      csr: { key: { type: 'ec', namedCurve: 'secp384r1' } },
      want: [{ field: 'key', kind: 'invalid', reason: /ECDSA on curve secp384r1; want P-256/ }],
    },
    'RSA 1024': {
      csr: { key: { type: 'rsa', modulusLength: 1024 } },
      want: [{ field: 'key', kind: 'invalid', reason: /RSA 1024 bits; want at least 2048/ }],
    },
    Ed25519: {
      csr: { key: { type: 'other', algorithm: 'ed25519' } },
      want: [{ field: 'key', kind: 'invalid', reason: /ed25519; want ECDSA P-256 or RSA/ }],
    },
    'another node’s address': {
      csr: { ipAddresses: ['10.0.0.6'] },
      want: [
        {
          field: 'IP SAN',
          kind: 'forbidden',
          reason: /10\.0\.0\.6 is not the address the request came from \(10\.0\.0\.5\)/,
        },
      ],
    },
    'its own address plus another': {
      csr: { ipAddresses: ['10.0.0.5', '10.0.0.6'] },
      want: [{ field: 'IP SAN', kind: 'forbidden', reason: /10\.0\.0\.6 is not/ }],
    },
    'a reachable address from a loopback peer': {
      csr: { ipAddresses: ['10.0.0.5'] },
      peer: '127.0.0.1',
      want: [
        {
          field: 'IP SAN',
          kind: 'forbidden',
          reason: /10\.0\.0\.5 is not the address the request came from \(127\.0\.0\.1\)/,
        },
      ],
    },
    'a reachable address from the IPv6 loopback peer': {
      csr: { ipAddresses: ['10.0.0.5'] },
      peer: '::1',
      want: [
        {
          field: 'IP SAN',
          kind: 'forbidden',
          reason: /10\.0\.0\.5 is not the address the request came from \(::1\)/,
        },
      ],
    },
    'the IPv6 loopback address from a reachable peer': {
      csr: { ipAddresses: ['::1'] },
      want: [{ field: 'IP SAN', kind: 'forbidden', reason: /::1 is not the address/ }],
    },
    'a loopback address from a reachable peer': {
      csr: { ipAddresses: ['127.0.0.1'] },
      want: [{ field: 'IP SAN', kind: 'forbidden', reason: /127\.0\.0\.1 is not the address/ }],
    },
    'no IP SAN': {
      csr: { ipAddresses: [] },
      want: [{ field: 'IP SAN', kind: 'invalid', reason: /none; want the node's address 10\.0\.0\.5/ }],
    },
    'an IP SAN that is not an address': {
      csr: { ipAddresses: ['10.0.0.500'] },
      want: [{ field: 'IP SAN', kind: 'invalid', reason: /"10\.0\.0\.500" is not an IP address/ }],
    },
    'an IPv6 SAN for an IPv4 peer': {
      csr: { ipAddresses: ['2001:db8::5'] },
      want: [{ field: 'IP SAN', kind: 'forbidden', reason: /2001:db8::5 is not/ }],
    },
    'a DNS SAN for another name': {
      csr: { dnsNames: ['worker-1', 'kubernetes.default.svc'] },
      want: [
        {
          field: 'DNS SAN',
          kind: 'forbidden',
          reason: /"kubernetes\.default\.svc"; a node may name only itself/,
        },
      ],
    },
    'a signature that does not verify': {
      csr: { signatureValid: false },
      want: [{ field: 'signature', kind: 'invalid', reason: /does not verify with the request’s own key/ }],
    },
    'everything wrong at once, each named': {
      csr: {
        organizations: ['system:masters'],
        commonNames: ['admin'],
        key: { type: 'rsa', modulusLength: 512 },
        ipAddresses: ['10.9.9.9'],
        dnsNames: ['admin'],
        signatureValid: false,
      },
      want: [
        { field: 'signature', kind: 'invalid', reason: /./ },
        { field: 'subject O', kind: 'forbidden', reason: /./ },
        { field: 'subject CN', kind: 'invalid', reason: /./ },
        { field: 'key', kind: 'invalid', reason: /./ },
        { field: 'IP SAN', kind: 'forbidden', reason: /./ },
        { field: 'DNS SAN', kind: 'forbidden', reason: /./ },
      ],
    },
  }
  for (const [name, tc] of Object.entries(refused))
    it(`refuses ${name}`, () => {
      const got = csrProblems(
        { ...honest, ...tc.csr },
        { peerAddress: tc.peer ?? PEER, expectedNodeName: tc.expectedNodeName },
      )
      expect(got.map(({ field, kind }) => ({ field, kind }))).to.deep.equal(
        tc.want.map(({ field, kind }) => ({ field, kind })),
      )
      got.forEach((p, i) => expect(p.reason).to.match(tc.want[i]?.reason ?? /^$/))
    })

  it('reads the claimed node name only from exactly one system:node: CN', () => {
    expect(claimedNodeName({ commonNames: ['system:node:w'] })).to.equal('w')
    expect(claimedNodeName({ commonNames: ['w'] })).to.equal(undefined)
    expect(claimedNodeName({ commonNames: ['system:node:a', 'system:node:b'] })).to.equal(undefined)
    expect(claimedNodeName({ commonNames: [] })).to.equal(undefined)
    expect(isRfc1123Name('a'.repeat(63))).to.be.true
    expect(isRfc1123Name('a'.repeat(64))).to.be.false
    expect(isRfc1123Name('a')).to.be.true
    expect(isRfc1123Name('a.b-c.d')).to.be.true
    // 253 characters in all, each label within 63
    const labels = (n: number) => Array.from({ length: n }, () => 'a'.repeat(63)).join('.')
    expect(isRfc1123Name(`${labels(3)}.${'b'.repeat(61)}`)).to.be.true
    expect(isRfc1123Name(`${labels(3)}.${'b'.repeat(62)}`)).to.be.false
    expect(isRfc1123Name('-a')).to.be.false
    expect(isRfc1123Name('a..b')).to.be.false
  })
})

describe('IP addresses by value', () => {
  const same: Array<[string, string]> = [
    ['10.0.0.5', '::ffff:10.0.0.5'],
    ['::FFFF:10.0.0.5', '::ffff:a00:5'],
    ['2001:db8::1', '2001:0db8:0000:0000:0000:0000:0000:0001'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::', '0::0'],
    ['192.168.100.200', '::ffff:192.168.100.200'],
    ['::ffff:192.168.100.200', '::ffff:c0a8:64c8'],
    ['::ffff:255.1.0.254', '255.1.0.254'],
    ['::ffff:10.0.0.5%eth0', '10.0.0.5'],
  ]
  for (const [a, b] of same) it(`${a} is ${b}`, () => expect(sameIp(a, b)).to.be.true)
  const different: Array<[string, string]> = [
    ['10.0.0.5', '10.0.0.6'],
    ['::1', '127.0.0.1'],
    ['::10.0.0.5', '10.0.0.5'], // IPv4-compatible (deprecated), not mapped
    ['10.0.0.5', 'not an ip'],
    ['not an ip', 'not an ip'],
    ['not an ip', '10.0.0.5'],
    ['::ffff:192.168.100.200', '192.168.200.100'],
    ['::fffe:10.0.0.5', '10.0.0.5'],
  ]
  for (const [a, b] of different) it(`${a} is not ${b}`, () => expect(sameIp(a, b)).to.be.false)

  it('gives 4 bytes for IPv4 and mapped IPv6, 16 otherwise', () => {
    expect(ipBytes('::ffff:1.2.3.4')).to.deep.equal(Buffer.from([1, 2, 3, 4]))
    expect(ipBytes('2001:db8::')?.length).to.equal(16)
    expect(ipBytes('1.2.3')).to.equal(undefined)
    expect(ipBytes('::ffff:192.168.100.200')).to.deep.equal(Buffer.from([192, 168, 100, 200]))
    expect(ipBytes('2001:db8::1:2')).to.deep.equal(
      Buffer.from([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2]),
    )
    expect(ipBytes('1:2:3:4:5:6:7:8')).to.deep.equal(
      Buffer.from([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]),
    )
    expect(ipBytes('64:ff9b::192.0.2.33')).to.deep.equal(
      Buffer.from([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 33]),
    )
    expect(ipBytes('fe80::1%eth0:0')?.length).to.equal(16)
  })

  const loopback: Record<string, boolean> = {
    '127.0.0.1': true,
    '127.255.255.254': true,
    '::1': true,
    '0:0:0:0:0:0:0:1': true,
    '::1%lo': true,
    '::ffff:127.0.0.1': true,
    '128.0.0.1': false,
    '126.0.0.1': false,
    '::': false,
    '::2': false,
    '1::1': false,
    '::101': false,
    'not an ip': false,
  }
  for (const [address, want] of Object.entries(loopback))
    it(`${address} is ${want ? '' : 'not '}loopback`, () => expect(isLoopback(address)).to.equal(want))

  const peers: Record<string, string> = {
    '10.0.0.5:4711': '10.0.0.5',
    '::1:4711': '::1',
    '[::1]:4711': '::1',
    '::ffff:127.0.0.1:4711': '::ffff:127.0.0.1',
    // not grpc-js forms: left as they are, so they match no address
    'x[::1]:4711': 'x[::1]',
    '[::1]:4711x': '[::1]:4711x',
  }
  for (const [peer, host] of Object.entries(peers))
    it(`reads host ${host} from grpc-js peer ${peer}`, () => expect(peerHost(peer)).to.equal(host))
})
