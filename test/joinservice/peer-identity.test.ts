import { expect } from '../support/chai.js'
import { refreshingMembers, staticMembers } from '../../src/lib/joinservice/members.js'
import { identifyPeer } from '../../src/lib/joinservice/peer-identity.js'
import { JoinRefusedError, TicketStepError } from '../../src/lib/joinservice/refusals.js'
import type { NodeMember } from '../../src/lib/nodeconfig/index.js'

const AK = { akName: Buffer.from(`000b${'ab'.repeat(32)}`, 'hex') }
const members: NodeMember[] = [
  { name: 'CP_0', role: 'control-plane', vpcIP: '10.0.0.2' },
  { name: 'worker-0', role: 'worker', vpcIP: '10.0.0.5' },
  { name: 'worker-a', role: 'worker', vpcIP: '10.0.0.9' },
  { name: 'worker-b', role: 'worker', vpcIP: '10.0.0.9' },
]

describe("who a join service's peer is (metadata, never the request)", () => {
  it('is the one instance listed at its address, by value, with the TPM its connection proved', async () => {
    const directory = staticMembers(members)
    expect(await identifyPeer(directory, '::ffff:10.0.0.2', AK)).to.deep.equal({
      node: 'cp-0', // as Kubernetes names it
      role: 'control-plane',
      address: '::ffff:10.0.0.2',
      tpm: AK.akName.toString('hex'),
    })
  })

  const refused: Record<string, { address: string; attested?: boolean; want: RegExp }> = {
    'an address the metadata does not list': {
      address: '10.0.0.77',
      want: /^peer address 10\.0\.0\.77: the cluster's metadata lists no instance there; only its members may join$/,
    },
    'an address listed for several instances': {
      address: '10.0.0.9',
      want: /^peer address 10\.0\.0\.9: the cluster's metadata lists several instances there \(worker-a, worker-b\); the join service cannot tell which node asks$/,
    },
    'a connection without attestation': {
      address: '10.0.0.5',
      attested: false,
      want: /^the connection is not attested$/,
    },
  }
  for (const [name, tc] of Object.entries(refused))
    it(`refuses ${name}`, async () => {
      const err = await identifyPeer(
        staticMembers(members),
        tc.address,
        tc.attested === false ? undefined : AK,
      ).then(
        () => expect.fail('identified'),
        (e: unknown) => e as JoinRefusedError,
      )
      expect(err).to.be.instanceOf(JoinRefusedError).and.include({ status: 'permission-denied' })
      expect(err.message).to.match(tc.want)
    })

  it('names the step when the metadata service cannot be asked', async () => {
    const down = refreshingMembers({ fetch: () => Promise.reject(new Error('ECONNREFUSED')), clock: () => 0 })
    await expect(identifyPeer(down, '10.0.0.5', AK)).to.be.rejectedWith(
      TicketStepError,
      /^asking the metadata service which node has this address failed$/,
    )
  })
})

describe('the metadata service as the join service follows it', () => {
  function directory() {
    const listed: NodeMember[] = [members[0]!]
    const clock = { now: 0 }
    let fetches = 0
    const dir = refreshingMembers({
      fetch: async () => (fetches++, [...listed]),
      clock: () => clock.now,
      sleep: async (ms) => void (clock.now += ms),
      maxAgeMs: 30_000,
      recheckAfterMs: 1_000,
    })
    return { dir, listed, clock, fetches: () => fetches }
  }

  it('finds a node added a moment ago (waiting for a list a second newer), and asks again once its list is old', async () => {
    const { dir, listed, clock, fetches } = directory()
    expect((await dir.at('10.0.0.2')).map((m) => m.name)).to.deep.equal(['CP_0'])
    listed.push(members[1]!)
    clock.now = 200
    expect((await dir.at('10.0.0.5')).map((m) => m.name)).to.deep.equal(['worker-0'])
    expect(clock.now, 'it waited until the list was a second old').to.equal(1_000)
    expect(fetches()).to.equal(2)
    listed.splice(0, 1) // CP_0 leaves the cluster
    clock.now = 20_000
    expect(await dir.at('10.0.0.2'), 'a known address is served from the list').to.have.length(1)
    clock.now = 31_000
    expect(await dir.at('10.0.0.2'), 'the list is old: asked again, and a second later').to.deep.equal([])
    expect(fetches()).to.equal(4)
  })

  it('costs the metadata service one request per second, however many unknown addresses ask', async () => {
    const { dir, clock, fetches } = directory()
    for (let i = 0; i < 2_000; i++) await dir.at(`10.1.${i >> 8}.${i & 255}`)
    expect(fetches(), 'one per second of waiting').to.equal(clock.now / 1_000 + 1)
    expect(clock.now).to.equal(2_000 * 1_000)
  })

  it('shares one request among callers asking at once', async () => {
    const { dir, fetches } = directory()
    await Promise.all(Array.from({ length: 50 }, () => dir.at('10.0.0.2')))
    expect(fetches()).to.equal(1)
  })
})
