import { expect } from '../support/chai.js'
import { ClusterKms } from '../../src/lib/kms/index.js'
import type { IssueJoinTicketRequest } from '../../src/gen/join.js'
import { createKubeletSigner } from '../../src/lib/joinservice/kubelet-signer.js'
import {
  checkJoinRequest,
  issueJoinTicket,
  issueRejoinTicket,
  JoinRefusedError,
  TicketStepError,
  type DataKeyGetter,
  type TicketDeps,
} from '../../src/lib/joinservice/ticket.js'
import type { ClusterCa } from '../../src/lib/joinservice/cluster-ca.js'
import type { CsrFields } from '../../src/lib/joinservice/csr-policy.js'
import { InMemoryStateDisks } from '../support/state-disks.js'
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
const PEER = '10.0.0.5'
const kms = new ClusterKms(MASTER.key, MASTER.salt)

describe('join tickets', () => {
  let ca: ClusterCa
  before(async () => (ca = await makeClusterCa()))

  /** A spy around the data keys: which IDs were asked for. */
  function deps(opts: { dataKey?: DataKeyGetter; tokens?: FakeTokenIssuer } = {}) {
    const asked: string[] = []
    const stateDisks = new InMemoryStateDisks()
    const dataKey = opts.dataKey ?? realDataKeys()
    const d: TicketDeps = {
      dataKey: (id, length) => (asked.push(`${id}/${length}`), dataKey(id, length)),
      tokens: opts.tokens ?? new FakeTokenIssuer(),
      kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
      ca,
      controlPlaneServiceFiles: serviceFiles,
      components: async () => COMPONENTS,
      measurementSalt: MEASUREMENT_SALT,
      stateDisks,
      apiServerEndpoint: '10.0.0.1:6443',
    }
    return { d, asked, stateDisks }
  }
  const request = async (
    over: Partial<IssueJoinTicketRequest> = {},
    csr: Partial<CsrFields> = {},
  ): Promise<IssueJoinTicketRequest> => ({
    diskUuid: UUID,
    certificateRequest: encodeFakeCsr(await nodeCsr('worker-1', PEER, csr)),
    isControlPlane: false,
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
    ...over,
  })
  const check = (req: IssueJoinTicketRequest, peer = PEER) =>
    checkJoinRequest(req, peer, { parseCsr: fakeCsrParser })

  const roles: Record<string, { isControlPlane: boolean; wantFiles: string[] }> = {
    worker: { isControlPlane: false, wantFiles: [] },
    'control plane': {
      isControlPlane: true,
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
      const { d, asked } = deps()
      const checked = check(await request({ isControlPlane: tc.isControlPlane }))
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
      const cert = certOf(ticket.kubeletCert)
      expect(cert.subject).to.contain('CN=system:node:worker-1')
      expect(cert.subjectAltName).to.equal('DNS:worker-1, IP Address:10.0.0.5')
      expect(cert.checkIssued(certOf(Buffer.from(ca.caCertPem)))).to.be.true
      expect(ticket.controlPlaneFiles.map((f) => f.name)).to.deep.equal(tc.wantFiles)
      expect(checked.role).to.equal(tc.isControlPlane ? 'control-plane' : 'worker')
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
      peer?: string
      raw?: Buffer
      status: string
      want: RegExp
      node: string
    }
  > = {
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
    'a request that is not a CSR': {
      raw: Buffer.from('garbage'),
      status: 'invalid-argument',
      want: /^certificate_request: not a PKCS#10 request: fake CSR parser: not a fake CSR$/,
      node: '',
    },
    'a CSR for another address': {
      peer: '10.0.0.9',
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
      const req = await request(tc.req, tc.csr)
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

  it('checks against the name the cluster knows for the address', async () => {
    const req = await request({ isControlPlane: true })
    req.certificateRequest = encodeFakeCsr(await nodeCsr('control-plane-0', PEER, { dnsNames: [] }))
    const expectedNodeName = (ip: string) => (ip === PEER ? 'worker-1' : undefined)
    expect(() => checkJoinRequest(req, PEER, { parseCsr: fakeCsrParser, expectedNodeName })).to.throw(
      JoinRefusedError,
      /subject CN: node name "control-plane-0"; this node is "worker-1"/,
    )
  })

  const failures: Record<string, { setup: () => ReturnType<typeof deps>; wantStep: RegExp }> = {
    'the key service is down': {
      setup: () => deps({ dataKey: stubDataKeysDown }),
      wantStep: /^getting the (measurement secret|disk key) from the key service failed$/,
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

  describe('rejoin', () => {
    it('issues the disk key and measurement secret only, for a disk a join ticket registered', async () => {
      const { d, asked, stateDisks } = deps()
      await issueJoinTicket(check(await request()), d)
      expect(stateDisks.disks.get(UUID)).to.deep.equal({ node: 'worker-1', role: 'worker' })
      asked.length = 0
      const known: unknown[] = []
      const ticket = await issueRejoinTicket({ diskUuid: UUID }, d, (record) => known.push(record))
      expect(ticket).to.deep.equal({
        stateDiskKey: kms.diskKey(UUID),
        measurementSecret: kms.measurementSecret(),
      })
      expect(asked.sort()).to.deep.equal([`${UUID}/32`, 'measurementSecret/32'])
      expect(known).to.deep.equal([{ node: 'worker-1', role: 'worker' }])
    })

    it('refuses a disk the cluster never issued a ticket for, asking for no key', async () => {
      const { d, asked } = deps()
      await expect(issueRejoinTicket({ diskUuid: UUID }, d)).to.be.rejectedWith(
        JoinRefusedError,
        /^disk_uuid: [0-9a-f-]{36} is not a state disk of this cluster/,
      )
      expect(asked).to.deep.equal([])
    })

    it('refuses a disk UUID that is not one, asking for no key', async () => {
      const { d, asked } = deps()
      await expect(issueRejoinTicket({ diskUuid: 'ca_emergency_ssh' }, d)).to.be.rejectedWith(
        JoinRefusedError,
        /^disk_uuid: "ca_emergency_ssh" is not a UUID$/,
      )
      expect(asked).to.deep.equal([])
    })
  })
})
