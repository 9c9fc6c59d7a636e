import { expect } from '../support/chai.js'
import { ClusterKms } from '../../src/lib/kms/index.js'
import type { IssueJoinTicketRequest } from '../../src/gen/join.js'
import { createKubeletSigner } from '../../src/lib/joinservice/kubelet-signer.js'
import {
  checkDiskUuid,
  checkJoinRequest,
  issueJoinTicket,
  issueRejoinTicket,
  type DataKeysGetter,
  type TicketDeps,
} from '../../src/lib/joinservice/ticket.js'
import { JoinRefusedError, TicketStepError } from '../../src/lib/joinservice/refusals.js'
import type { PeerIdentity } from '../../src/lib/joinservice/peer-identity.js'
import type { ClusterCa } from '../../src/lib/joinservice/cluster-ca.js'
import type { CsrFields } from '../../src/lib/joinservice/csr-policy.js'
import { InMemoryStateDisks } from '../support/state-disks.js'
import { DiskRecordExistsError } from '../../src/lib/joinservice/state-disks.js'
import {
  certOf,
  COMPONENTS,
  encodeFakeCsr,
  FakeTokenIssuer,
  fakeCsrParser,
  makeClusterCa,
  MASTER,
  MEASUREMENT_SALT,
  nodeCsr,
  realDataKeys,
  serviceFiles,
  SERVICE_FILES,
  stubDataKeysDown,
} from './fakes.js'

const UUID = '0b4f5e2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b'
const OTHER_UUID = '0b4f5e2a-1c3d-4e5f-8a9b-000000000002'
const PEER = '10.0.0.5'
const TPM = `000b${'aa'.repeat(32)}`
const NOW = new Date('2026-11-27T10:00:00Z')
/** Who the metadata and the attested connection say the caller is. */
const worker1: PeerIdentity = { node: 'worker-1', role: 'worker', address: PEER, tpm: TPM }
const controlPlane1: PeerIdentity = { node: 'cp-1', role: 'control-plane', address: '10.0.0.2', tpm: TPM }
const kms = new ClusterKms(MASTER.key, MASTER.salt)

describe('join tickets', () => {
  let ca: ClusterCa
  before(async () => (ca = await makeClusterCa()))

  /** A spy around the data keys: which IDs were asked for. */
  function deps(opts: { dataKeys?: DataKeysGetter; tokens?: FakeTokenIssuer } = {}) {
    const asked: string[] = []
    const stateDisks = new InMemoryStateDisks()
    const dataKeys = opts.dataKeys ?? realDataKeys()
    const d: TicketDeps = {
      dataKeys: (keys) => (asked.push(...keys.map((k) => `${k.id}/${k.length}`)), dataKeys(keys)),
      tokens: opts.tokens ?? new FakeTokenIssuer(),
      kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
      ca,
      controlPlaneServiceFiles: serviceFiles,
      kubernetes: async () => ({ version: 'v1.31.13', components: COMPONENTS }),
      measurementSalt: MEASUREMENT_SALT,
      stateDisks,
      apiServerEndpoint: '10.0.0.1:6443',
      clock: () => NOW,
    }
    return { d, asked, stateDisks }
  }
  const request = async (
    over: Partial<IssueJoinTicketRequest> = {},
    csr: Partial<CsrFields> = {},
    peer: PeerIdentity = worker1,
  ): Promise<IssueJoinTicketRequest> => ({
    diskUuid: UUID,
    certificateRequest: encodeFakeCsr(await nodeCsr(peer.node, peer.address, csr)),
    isControlPlane: peer.role === 'control-plane',
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
    ...over,
  })
  const check = (req: IssueJoinTicketRequest, peer: PeerIdentity = worker1) =>
    checkJoinRequest(req, peer, { parseCsr: fakeCsrParser })

  const roles: Record<string, { peer: PeerIdentity; wantFiles: string[] }> = {
    worker: { peer: worker1, wantFiles: [] },
    'control plane': {
      peer: controlPlane1,
      wantFiles: [
        'ca.crt',
        'ca.key',
        'sa.key',
        'sa.pub',
        'front-proxy-ca.crt',
        'front-proxy-ca.key',
        'etcd/ca.crt',
        'etcd/ca.key',
        ...SERVICE_FILES.map((f) => f.name),
      ],
    },
  }
  for (const [role, tc] of Object.entries(roles))
    it(`issues a ${role} everything it needs to join`, async () => {
      const { d, asked, stateDisks } = deps()
      const checked = check(await request({}, {}, tc.peer), tc.peer)
      const ticket = await issueJoinTicket(checked, d)
      expect(ticket.stateDiskKey).to.deep.equal(kms.diskKey(UUID))
      expect(ticket.measurementSecret).to.deep.equal(kms.measurementSecret())
      expect(asked.sort()).to.deep.equal([`${UUID}/32`, 'measurementSecret/32'])
      expect(ticket.measurementSalt).to.deep.equal(MEASUREMENT_SALT)
      expect(ticket.token).to.match(/^[a-z0-9]{6}\.[a-z0-9]{16}$/)
      expect(ticket.discoveryTokenCaCertHash)
        .to.equal(ca.caCertHash)
        .and.match(/^sha256:[0-9a-f]{64}$/)
      expect(ticket.apiServerEndpoint).to.equal('10.0.0.1:6443')
      expect(ticket.kubernetesComponents).to.deep.equal(COMPONENTS)
      expect(ticket.kubernetesVersion).to.equal('v1.31.13')
      const cert = certOf(ticket.kubeletCert)
      expect(cert.subject).to.contain(`CN=system:node:${tc.peer.node}`)
      expect(cert.subjectAltName).to.equal(`DNS:${tc.peer.node}, IP Address:${tc.peer.address}`)
      expect(cert.checkIssued(certOf(Buffer.from(ca.caCertPem)))).to.be.true
      expect(ticket.controlPlaneFiles.map((f) => f.name)).to.deep.equal(tc.wantFiles)
      expect(checked.role).to.equal(tc.peer.role)
      expect(stateDisks.disks.get(UUID), 'the disk recorded for this node, address and TPM').to.deep.equal({
        ...tc.peer,
        recordedAt: NOW.toISOString(),
      })
    })

  it('derives the disk key from the lower-cased UUID, as the init node did', async () => {
    const ticket = await issueJoinTicket(check(await request({ diskUuid: UUID.toUpperCase() })), deps().d)
    expect(ticket.stateDiskKey).to.deep.equal(kms.diskKey(UUID))
  })

  const refused: Record<
    string,
    {
      req?: Partial<IssueJoinTicketRequest>
      csr?: Partial<CsrFields>
      peer?: PeerIdentity
      raw?: Buffer
      status: string
      want: RegExp
      node: string
    }
  > = {
    'a worker asking as a control plane (the PKI and the master secret)': {
      req: { isControlPlane: true },
      status: 'permission-denied',
      want: /^is_control_plane: true, but the cluster's metadata lists 10\.0\.0\.5 as worker "worker-1"$/,
      node: 'worker-1',
    },
    'a control plane asking as a worker': {
      req: { isControlPlane: false },
      peer: controlPlane1,
      status: 'permission-denied',
      want: /^is_control_plane: false, but the cluster's metadata lists 10\.0\.0\.2 as control-plane "cp-1"$/,
      node: 'cp-1',
    },
    "a CSR for another node's name": {
      csr: { commonNames: ['system:node:worker-2'], dnsNames: [] },
      status: 'permission-denied',
      want: /^certificate_request: subject CN: node name "worker-2"; this node is "worker-1"$/,
      node: 'worker-1',
    },
    'a disk UUID that names another cluster key': {
      req: { diskUuid: 'measurementSecret' },
      status: 'invalid-argument',
      want: /^disk_uuid: "measurementSecret" is not a UUID$/,
      node: 'worker-1',
    },
    'an empty disk UUID': {
      req: { diskUuid: '' },
      status: 'invalid-argument',
      want: /^disk_uuid: "" is not a UUID/,
      node: 'worker-1',
    },
    'a disk UUID with a prefix (a UUID inside another key ID)': {
      req: { diskUuid: `key-${UUID}` },
      status: 'invalid-argument',
      want: /^disk_uuid: "key-0b4f5e2a-[0-9a-f-]+" is not a UUID$/,
      node: 'worker-1',
    },
    'a disk UUID with a suffix': {
      req: { diskUuid: `${UUID}/measurementSecret` },
      status: 'invalid-argument',
      want: /^disk_uuid: "0b4f5e2a-[0-9a-f-]+\/measurementSecret" is not a UUID$/,
      node: 'worker-1',
    },
    'a long disk UUID, quoted only up to 64 characters': {
      req: { diskUuid: 'x'.repeat(100) },
      status: 'invalid-argument',
      want: new RegExp(`^disk_uuid: "${'x'.repeat(64)}" is not a UUID$`),
      node: 'worker-1',
    },
    "a CSR for another node's name with a weak key: forbidden outweighs invalid": {
      csr: { commonNames: ['system:node:worker-2'], dnsNames: [], key: { type: 'rsa', modulusLength: 1024 } },
      status: 'permission-denied',
      want: /^certificate_request: .*node name "worker-2".*RSA 1024 bits/,
      node: 'worker-1',
    },
    'a request that is not a CSR': {
      raw: Buffer.from('garbage'),
      status: 'invalid-argument',
      want: /^certificate_request: not a PKCS#10 request: fake CSR parser: not a fake CSR$/,
      node: 'worker-1',
    },
    'a CSR for another address': {
      peer: { ...worker1, address: '10.0.0.9' },
      status: 'permission-denied',
      want: /^certificate_request: IP SAN: 10\.0\.0\.5 is not the address the request came from \(10\.0\.0\.9\)$/,
      node: 'worker-1',
    },
    'a CSR asking for system:masters': {
      csr: { organizations: ['system:nodes', 'system:masters'] },
      status: 'permission-denied',
      want: /^certificate_request: subject O: /,
      node: 'worker-1',
    },
    'a CSR with an RSA 1024 key and no IP SAN': {
      csr: { key: { type: 'rsa', modulusLength: 1024 }, ipAddresses: [] },
      status: 'invalid-argument',
      want: /^certificate_request: key: RSA 1024 bits; want at least 2048; IP SAN: none/,
      node: 'worker-1',
    },
  }
  for (const [name, tc] of Object.entries(refused))
    it(`refuses ${name} before asking for any key`, async () => {
      const req = await request(tc.req, tc.csr, tc.peer && { ...tc.peer, address: PEER })
      if (tc.raw) req.certificateRequest = tc.raw
      const err = (() => {
        try {
          check(req, tc.peer)
        } catch (e) {
          return e
        }
        return undefined
      })()
      expect(err).to.be.instanceOf(JoinRefusedError)
      const refusal = err as JoinRefusedError
      expect(refusal.status).to.equal(tc.status)
      expect(refusal.message).to.match(tc.want)
      expect(refusal.node).to.equal(tc.node)
    })

  describe('a join is for a new disk', () => {
    it("refuses another node's disk before asking for any key, naming its node", async () => {
      const { d, asked, stateDisks } = deps()
      await issueJoinTicket(check(await request()), d)
      asked.length = 0
      const intruder: PeerIdentity = {
        node: 'worker-2',
        role: 'worker',
        address: '10.0.0.6',
        tpm: `000b${'bb'.repeat(32)}`,
      }
      const err = await issueJoinTicket(check(await request({}, {}, intruder), intruder), d).then(
        () => expect.fail('issued'),
        (e: unknown) => e as JoinRefusedError,
      )
      expect(err)
        .to.be.instanceOf(JoinRefusedError)
        .and.include({ status: 'permission-denied', node: 'worker-2' })
      expect(err.message).to.equal(
        `disk_uuid: ${UUID} is the state disk of node "worker-1" already; a join is for a new disk (a rebooted node asks for a rejoin ticket)`,
      )
      expect(asked, 'no key derived').to.deep.equal([])
      expect(stateDisks.disks.get(UUID)?.node, 'the record is not rewritten').to.equal('worker-1')
    })

    const sameDiskAgain: Record<string, { again: PeerIdentity; served: boolean }> = {
      'the same node, address and TPM (its answer was lost)': { again: worker1, served: true },
      'the same node name from another TPM': {
        again: { ...worker1, tpm: `000b${'cc'.repeat(32)}` },
        served: false,
      },
      'the same node name from another address': {
        again: { ...worker1, address: '10.0.0.7' },
        served: false,
      },
    }
    for (const [name, tc] of Object.entries(sameDiskAgain))
      it(`asking again for a recorded disk: ${name} is ${tc.served ? 'served' : 'refused'}`, async () => {
        const { d } = deps()
        await issueJoinTicket(check(await request()), d)
        const again = issueJoinTicket(check(await request({}, {}, tc.again), tc.again), d)
        if (tc.served) expect((await again).stateDiskKey).to.deep.equal(kms.diskKey(UUID))
        else
          await expect(again).to.be.rejectedWith(
            JoinRefusedError,
            /is the state disk of node "worker-1" already/,
          )
      })

    it("retires the node's earlier disk records when it joins with a new disk (reinstalled)", async () => {
      const { d, stateDisks } = deps()
      await issueJoinTicket(check(await request({ diskUuid: OTHER_UUID })), d)
      await issueJoinTicket(check(await request({ diskUuid: UUID })), d)
      expect([...stateDisks.disks.keys()]).to.deep.equal([UUID])
    })
  })

  const failures: Record<string, { setup: () => ReturnType<typeof deps>; wantStep: RegExp }> = {
    'the key service is down': {
      setup: () => deps({ dataKeys: stubDataKeysDown }),
      wantStep: /^getting the disk key and the measurement secret from the key service failed$/,
    },
    'the token cannot be registered': {
      setup: () => {
        const tokens = new FakeTokenIssuer()
        tokens.failWith = new Error('registering bootstrap token abcdef: API server unreachable')
        return deps({ tokens })
      },
      wantStep: /^issuing a bootstrap token failed$/,
    },
  }
  for (const [name, tc] of Object.entries(failures))
    it(`names the failed step, and only the step, when ${name}`, async () => {
      const err = await issueJoinTicket(check(await request()), tc.setup().d).then(
        () => expect.fail('issued'),
        (e: unknown) => e,
      )
      expect(err).to.be.instanceOf(TicketStepError)
      expect((err as Error).message).to.match(tc.wantStep)
      expect((err as Error).cause, 'the cause is kept for the server log').to.be.instanceOf(Error)
    })

  it('checkDiskUuid: a refusal with no node named when none is given', () => {
    expect(() => checkDiskUuid('not-a-uuid'))
      .to.throw(JoinRefusedError, /^disk_uuid: "not-a-uuid" is not a UUID$/)
      .with.property('node', '')
    expect(checkDiskUuid(UUID.toUpperCase())).to.equal(UUID)
  })

  describe('each step, failing alone, is named', () => {
    const down = () => Promise.reject(new Error('down'))
    const steps: Record<string, { peer?: PeerIdentity; edit: (d: TicketDeps) => void }> = {
      'getting the disk key and the measurement secret from the key service': {
        edit: (d) => (d.dataKeys = down),
      },
      'recording the state disk': { edit: (d) => (d.stateDisks.create = down) },
      "removing the node's earlier disk records": { edit: (d) => (d.stateDisks.disksOf = down) },
      "reading the cluster's Kubernetes version and components": { edit: (d) => (d.kubernetes = down) },
      'signing the kubelet certificate': { edit: (d) => (d.kubeletSigner = { sign: down }) },
      "reading the control plane's service files": {
        peer: controlPlane1,
        edit: (d) => (d.controlPlaneServiceFiles = down),
      },
    }
    for (const [name, tc] of Object.entries(steps))
      it(name, async () => {
        const { d } = deps()
        tc.edit(d)
        const peer = tc.peer ?? worker1
        const err = await issueJoinTicket(check(await request({}, {}, peer), peer), d).then(
          () => expect.fail('issued'),
          (e: unknown) => e,
        )
        expect(err)
          .to.be.instanceOf(TicketStepError)
          .and.include({ step: name, message: `${name} failed` })
        expect((err as Error).cause).to.have.property('message', 'down')
      })

    it('looking up the state disk (rejoin)', async () => {
      const { d } = deps()
      d.stateDisks.lookup = () => Promise.reject(new Error('down'))
      const err = await issueRejoinTicket({ diskUuid: UUID }, worker1, d).then(
        () => expect.fail('issued'),
        (e: unknown) => e,
      )
      expect(err)
        .to.be.instanceOf(TicketStepError)
        .and.include({ step: 'looking up the state disk', message: 'looking up the state disk failed' })
    })
  })

  it('refuses a join for a disk recorded for another node name at the same address and TPM', async () => {
    const { d, asked } = deps()
    await issueJoinTicket(check(await request()), d)
    asked.length = 0
    const renamed: PeerIdentity = { ...worker1, node: 'worker-7' }
    await expect(issueJoinTicket(check(await request({}, {}, renamed), renamed), d)).to.be.rejectedWith(
      JoinRefusedError,
      /^disk_uuid: [0-9a-f-]{36} is the state disk of node "worker-1" already/,
    )
    expect(asked).to.deep.equal([])
  })

  it('refuses a join for a disk recorded already whose record cannot be read, naming no node', async () => {
    const { d, asked } = deps()
    d.stateDisks.create = (uuid) => Promise.reject(new DiskRecordExistsError(uuid, undefined))
    const err = await issueJoinTicket(check(await request()), d).then(
      () => expect.fail('issued'),
      (e: unknown) => e as JoinRefusedError,
    )
    expect(err)
      .to.be.instanceOf(JoinRefusedError)
      .and.include({ status: 'permission-denied', node: 'worker-1' })
    expect(err.message).to.equal(
      `disk_uuid: ${UUID} is the state disk of node "unknown" already; a join is for a new disk (a rebooted node asks for a rejoin ticket)`,
    )
    expect(asked).to.deep.equal([])
  })

  describe('rejoin', () => {
    it('issues the disk key and measurement secret only, to the node the disk was recorded for', async () => {
      const { d, asked } = deps()
      await issueJoinTicket(check(await request()), d)
      asked.length = 0
      const ticket = await issueRejoinTicket({ diskUuid: UUID }, worker1, d)
      expect(ticket).to.deep.equal({
        stateDiskKey: kms.diskKey(UUID),
        measurementSecret: kms.measurementSecret(),
      })
      expect(asked.sort()).to.deep.equal([`${UUID}/32`, 'measurementSecret/32'])
    })

    const strangers: Record<string, { peer: PeerIdentity; want: RegExp }> = {
      'another node of the cluster': {
        peer: { node: 'cp-0', role: 'control-plane', address: '10.0.0.2', tpm: TPM },
        want: /^disk_uuid: [0-9a-f-]{36} is the state disk of node "worker-1", not of "cp-0" \(the metadata's instance at 10\.0\.0\.2\)$/,
      },
      'the same name at another address': {
        peer: { ...worker1, address: '10.0.0.9' },
        want: /^disk_uuid: [0-9a-f-]{36} was recorded for "worker-1" at 10\.0\.0\.5; this request comes from 10\.0\.0\.9$/,
      },
      'a fresh TPM at the right address (a stand-in machine)': {
        peer: { ...worker1, tpm: `000b${'dd'.repeat(32)}` },
        want: /^disk_uuid: [0-9a-f-]{36} was recorded with another TPM \(attestation key a{16}…\); this node attested with d{16}…$/,
      },
    }
    for (const [name, tc] of Object.entries(strangers))
      it(`refuses a rejoin from ${name}, asking for no key`, async () => {
        const { d, asked } = deps()
        await issueJoinTicket(check(await request()), d)
        asked.length = 0
        const err = await issueRejoinTicket({ diskUuid: UUID }, tc.peer, d).then(
          () => expect.fail('issued'),
          (e: unknown) => e as JoinRefusedError,
        )
        expect(err).to.be.instanceOf(JoinRefusedError).and.include({ status: 'permission-denied' })
        expect(err.message).to.match(tc.want)
        expect(asked).to.deep.equal([])
      })

    it('takes an IPv4-mapped address for the recorded IPv4 address (a dual-stack listener)', async () => {
      const { d } = deps()
      await issueJoinTicket(check(await request()), d)
      const mapped = { ...worker1, address: `::ffff:${PEER}` }
      expect((await issueRejoinTicket({ diskUuid: UUID }, mapped, d)).stateDiskKey).to.deep.equal(
        kms.diskKey(UUID),
      )
    })

    it('refuses a disk the cluster never issued a ticket for, asking for no key', async () => {
      const { d, asked } = deps()
      const err = await issueRejoinTicket({ diskUuid: UUID }, worker1, d).then(
        () => expect.fail('issued'),
        (e: unknown) => e as JoinRefusedError,
      )
      expect(err)
        .to.be.instanceOf(JoinRefusedError)
        .and.include({ status: 'permission-denied', node: 'worker-1' })
      expect(err.message).to.match(/^disk_uuid: [0-9a-f-]{36} is not a state disk of this cluster/)
      expect(asked).to.deep.equal([])
    })

    it('refuses a disk UUID that is not one, asking for no key', async () => {
      const { d, asked } = deps()
      await expect(issueRejoinTicket({ diskUuid: 'ca_emergency_ssh' }, worker1, d)).to.be.rejectedWith(
        JoinRefusedError,
        /^disk_uuid: "ca_emergency_ssh" is not a UUID$/,
      )
      expect(asked).to.deep.equal([])
    })
  })
})
