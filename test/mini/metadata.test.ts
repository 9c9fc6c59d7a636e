/**
 * The http metadata provider: the mini's metadata service (Constellation's QEMU metadata API shape)
 * and the node side that turns its answers into the static metadata the daemons use, over real HTTP
 * on loopback. A node is known by the address it asks from.
 */
import { expect } from '../support/chai.js'
import { MetadataServer, type MetadataView } from '../../src/lib/mini/index.js'
import { httpMetadataClient, parseBootstrapperNodeConfig } from '../../src/lib/nodeconfig/index.js'
import { resolveMetadata, type MetadataClient } from '../../src/lib/nodeconfig/metadata.js'
import { ExitCode, exitCodeOf } from '../../src/lib/errors/index.js'

const HASH = '$2a$04$abcdefghijklmnopqrstuu5ySmH6TgnwhSUCqSnQRvSWdkm1rHHQe'
const VIEW: MetadataView = {
  members: [
    { name: 'cp-0', role: 'control-plane', vpcIP: '127.0.0.1' },
    { name: 'worker-0', role: 'worker', vpcIP: '127.0.0.2' },
  ],
  endpointHost: '127.0.0.1',
  initSecretHash: HASH,
}
const FAST = { attempts: 3, initialDelayMs: 10, maxDelayMs: 20 }

const nodeConfig = (url: string, extra = '') =>
  parseBootstrapperNodeConfig(
    `attestationVariant: qemu-vtpm
tpm: { device: /dev/tpmrm0 }
stateDisk: { device: /dev/sdb }
metadata: { provider: http, url: "${url}" }
${extra}`,
    'node.yaml',
  )

describe('http metadata provider (the mini metadata service over loopback HTTP)', () => {
  let server: MetadataServer
  let url: string
  let view: MetadataView

  beforeEach(async () => {
    view = VIEW
    server = new MetadataServer(() => view)
    url = await server.start('127.0.0.1:0')
  })
  afterEach(() => server.stop())

  it('a node learns who it is from the address it asks from, its peers, the endpoint and the hash', async () => {
    const resolved = await resolveMetadata(nodeConfig(url), httpMetadataClient(), FAST)
    expect(resolved.metadata).to.deep.equal({
      provider: 'static',
      self: { name: 'cp-0', role: 'control-plane', vpcIP: '127.0.0.1' },
      peers: VIEW.members,
      loadBalancerEndpoint: '127.0.0.1:6443',
      service: { url }, // where a join service asks again as the cluster changes
    })
    expect(resolved.initSecretHash).to.equal(HASH)
  })

  it('with sourceAddress, a node that shares the host asks from its own loopback address', async () => {
    const config = {
      ...nodeConfig(url),
      metadata: { provider: 'http' as const, url, sourceAddress: '127.0.0.2' },
    }
    const resolved = await resolveMetadata(config, httpMetadataClient(), FAST)
    expect(resolved.metadata?.self).to.deep.equal({ name: 'worker-0', role: 'worker', vpcIP: '127.0.0.2' })
  })

  it('sourceAddress is checked: an IP address, and only for the http provider', () => {
    const bad = () =>
      parseBootstrapperNodeConfig(
        `attestationVariant: qemu-vtpm
tpm: { device: /dev/tpmrm0 }
stateDisk: { device: /dev/sdb }
metadata: { provider: http, url: "${url}", sourceAddress: "node-7" }
`,
        'node.yaml',
      )
    expect(bad).to.throw(/metadata\.sourceAddress/)
    const staticWithSource = () =>
      parseBootstrapperNodeConfig(
        `attestationVariant: qemu-vtpm
tpm: { device: /dev/tpmrm0 }
stateDisk: { device: /dev/sdb }
initSecretHash: "${HASH}"
metadata: { provider: static, self: { name: a, role: worker, vpcIP: 10.0.0.2 }, sourceAddress: 10.0.0.2 }
`,
        'node.yaml',
      )
    expect(staticWithSource).to.throw(/metadata\.sourceAddress.*only provider http/)
  })

  it("the node config's own init secret hash wins over the service's", async () => {
    const own = '$2a$04$zzzzzzzzzzzzzzzzzzzzzu5ySmH6TgnwhSUCqSnQRvSWdkm1rHHQe'
    const resolved = await resolveMetadata(
      nodeConfig(url, `initSecretHash: ${own}`),
      httpMetadataClient(),
      FAST,
    )
    expect(resolved.initSecretHash).to.equal(own)
  })

  it('answers in Constellation’s InstanceMetadata shape', async () => {
    const client = httpMetadataClient()
    expect(JSON.parse(await client.get(url, '/self'))).to.deep.equal({
      Name: 'cp-0',
      ProviderID: 'mini://cp-0',
      Role: 'ControlPlane',
      VPCIP: '127.0.0.1',
      SecondaryIPRange: '',
      AliasIPRanges: [],
    })
    expect(JSON.parse(await client.get(url, '/endpoint'))).to.equal('127.0.0.1')
    expect(await client.get(url, '/initsecrethash')).to.equal(HASH)
  })

  it('an address no instance has gets 404, and resolving says which service and path failed', async () => {
    view = { ...VIEW, members: VIEW.members.filter((m) => m.name !== 'cp-0') }
    const err = await resolveMetadata(nodeConfig(url), httpMetadataClient(), FAST).catch((e: unknown) => e)
    expect(String(err)).to.include(`asking the metadata service ${url} for /self`)
    expect(String((err as Error).cause)).to.include('HTTP 404')
  })

  it('a service that is not up yet is asked again until it answers', async () => {
    await server.stop()
    let calls = 0
    const late: MetadataClient = {
      async get(u, path) {
        calls++
        if (calls === 2) url = await server.start(new URL(u).host)
        return httpMetadataClient().get(u, path)
      },
    }
    const resolved = await resolveMetadata(nodeConfig(url), late, FAST)
    expect(resolved.metadata?.self.name).to.equal('cp-0')
    expect(calls).to.be.greaterThan(2)
  })

  const bad: Record<string, { answers: Record<string, string>; want: RegExp }> = {
    'a Role that is neither ControlPlane nor Worker': {
      answers: { '/self': JSON.stringify({ Name: 'n', Role: 'Master', VPCIP: '10.0.0.1' }) },
      want: /answered \/self with something else.*Role "Master" is not ControlPlane or Worker/,
    },
    'a VPCIP that is not an IP': {
      answers: { '/self': JSON.stringify({ Name: 'n', Role: 'Worker', VPCIP: 'ten' }) },
      want: /VPCIP "ten" is not an IP address/,
    },
    'peers that are not a list': {
      answers: { '/peers': '{}' },
      want: /answered \/peers with something else.*not a list/,
    },
    'an endpoint with a path': { answers: { '/endpoint': '"10.0.0.1/x"' }, want: /not a host name/ },
    'a hash that is not bcrypt': { answers: { '/initsecrethash': 'hunter2' }, want: /not a bcrypt hash/ },
    'JSON that does not parse': { answers: { '/self': '{' }, want: /answered \/self with something else/ },
  }
  for (const [name, tc] of Object.entries(bad)) {
    it(`refuses ${name}, naming the path`, async () => {
      const real = httpMetadataClient()
      const client: MetadataClient = {
        get: (u, path) =>
          tc.answers[path] !== undefined ? Promise.resolve(tc.answers[path]) : real.get(u, path),
      }
      const err = await resolveMetadata(nodeConfig(url), client, FAST).catch((e: unknown) => e)
      expect(`${String(err)}: ${String((err as Error).cause)}`).to.match(tc.want)
      // bad outside input: exit 1 with a hint, not 70 ("This is a bug")
      expect(exitCodeOf(err)).to.equal(ExitCode.Failure)
    })
  }
})
