/** The JoinClient's pure parts: where it asks, which CA file names it writes. */
import { readdir } from 'node:fs/promises'
import { expect } from '../../support/chai.js'
import { createServer, type AddressInfo } from 'node:net'
import { attestedJoinTicketRequester } from '../../../src/lib/bootstrapper/index.js'
import { staticJoinEndpoints } from '../../../src/lib/bootstrapper/join/join-endpoints.js'
import { pkiFileNameProblem, writePkiFiles } from '../../../src/lib/bootstrapper/join/pki-files.js'
import type { NodeMember } from '../../../src/lib/nodeconfig/index.js'
import { createFakeAttestation } from '../../support/fake-attestation.js'
import { makeTempDir } from '../../support/temp.js'

const cp = (vpcIP: string, name = `cp-${vpcIP}`): NodeMember => ({ name, role: 'control-plane', vpcIP })
const worker = (vpcIP: string): NodeMember => ({ name: `w-${vpcIP}`, role: 'worker', vpcIP })

describe('staticJoinEndpoints: the load balancer first, then every control plane', () => {
  const cases: Record<
    string,
    { peers: NodeMember[]; loadBalancerEndpoint?: string; port?: number; want: string[] }
  > = {
    'load balancer host at the join port, then control planes; workers are never asked': {
      peers: [cp('10.0.0.2'), worker('10.0.0.7'), cp('10.0.0.3')],
      loadBalancerEndpoint: '10.0.0.100:6443',
      want: ['10.0.0.100:30090', '10.0.0.2:30090', '10.0.0.3:30090'],
    },
    'no load balancer': { peers: [cp('10.0.0.2')], want: ['10.0.0.2:30090'] },
    'an address named twice is asked once': {
      peers: [cp('127.0.0.1', 'a'), cp('127.0.0.1', 'b')],
      loadBalancerEndpoint: '127.0.0.1:6443',
      port: 4711,
      want: ['127.0.0.1:4711'],
    },
    'IPv6 in brackets': {
      peers: [cp('fd00::2')],
      loadBalancerEndpoint: '[fd00::100]:6443',
      want: ['[fd00::100]:30090', '[fd00::2]:30090'],
    },
    'nothing to ask': { peers: [worker('10.0.0.7')], want: [] },
  }
  for (const [name, tc] of Object.entries(cases))
    it(name, () =>
      expect(
        staticJoinEndpoints(
          { peers: tc.peers, loadBalancerEndpoint: tc.loadBalancerEndpoint },
          tc.port ?? 30090,
        ),
      ).to.deep.equal(tc.want),
    )
})

describe('control-plane file names from the ticket', () => {
  const cases: Record<string, { name: string; want?: string }> = {
    'a CA key': { name: 'ca.key' },
    'etcd CA in its subdirectory': { name: 'etcd/ca.crt' },
    'absolute path': { name: '/etc/shadow', want: 'absolute path' },
    'parent directory': { name: '../admin.conf', want: 'contains ".."' },
    'parent directory inside': { name: 'etcd/../../kubelet.conf', want: 'contains ".."' },
    'two dots anywhere': { name: 'ca..key', want: 'contains ".."' },
    empty: { name: '', want: 'empty name' },
    'a directory': { name: 'etcd/', want: 'names a directory' },
    'a NUL byte': { name: 'ca.key\0.txt', want: 'contains a NUL byte' },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`${name}: ${tc.want ?? 'written'}`, () => expect(pkiFileNameProblem(tc.name)).to.equal(tc.want))

  it('writes none of the files when one name is refused', async () => {
    const { dir, cleanup } = await makeTempDir()
    try {
      const files = [
        { name: 'ca.crt', data: Buffer.from('ca') },
        { name: '../escape', data: Buffer.from('x') },
      ]
      await expect(writePkiFiles(dir, files)).to.be.rejectedWith(/"\.\.\/escape": contains "\.\."/)
      expect(await readdir(dir)).to.deep.equal([])
    } finally {
      await cleanup()
    }
  })
})

describe('asking a join service once the join client is stopping', () => {
  it('sends nothing and leaves no rejection behind that could end the daemon', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    let connected = false
    const probe = createServer(() => (connected = true))
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
    try {
      const stopping = new AbortController()
      stopping.abort(new Error('the join client is stopping'))
      const port = (probe.address() as AddressInfo).port
      const ask = attestedJoinTicketRequester(createFakeAttestation().issuer(), 500)
      const request = {
        diskUuid: '',
        certificateRequest: Buffer.alloc(0),
        isControlPlane: false,
        hostPublicKey: Buffer.alloc(0),
        hostCertificatePrincipals: [],
      }
      await expect(ask(`127.0.0.1:${port}`, request, stopping.signal)).to.be.rejectedWith('stopping')
      await new Promise((r) => setTimeout(r, 700)) // past the request's own deadline
      expect(connected, 'no connection once stopping').to.equal(false)
      expect(unhandled).to.deep.equal([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
      await new Promise((r) => probe.close(r))
    }
  })
})
