/**
 * The JoinClient on stub parts (join services, disk, installer, kubeadm) with the real node lock,
 * CSR, kubelet signing and file writes: what it asks, what it takes, in which order, and what it
 * leaves alone when a ticket is bad, Init holds the lock, or it is stopped. The real wire (aTLS,
 * swtpm, cryptsetup, the kubeadm fake) runs in join.test.ts.
 */
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { status } from '@grpc/grpc-js'
import type { IssueJoinTicketRequest, IssueJoinTicketResponse } from '../../../src/gen/join.js'
import { NodeJoinClient, NodeLock, type JoinClientDeps } from '../../../src/lib/bootstrapper/index.js'
import { REFUSAL_PREFIX } from '../../../src/lib/atls/failure.js'
import { createKubeletSigner } from '../../../src/lib/joinservice/index.js'
import { type ClusterCa } from '../../../src/lib/joinservice/cluster-ca.js'
import { ClusterKms, deriveClusterId } from '../../../src/lib/kms/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { createLogger } from '../../../src/lib/system/index.js'
import { generateEcdsaP256KeyPair, parseCsr, toPem } from '../../../src/lib/x509/index.js'
import { expect } from '../../support/chai.js'
import { makeTempDir } from '../../support/temp.js'
import {
  COMPONENTS,
  makeClusterCa,
  MASTER,
  MEASUREMENT_SALT,
  SERVICE_FILES,
} from '../../joinservice/fakes.js'
import { JoinFailedError } from '../../../src/lib/bootstrapper/join/join-node.js'
import { type KubeadmJoinInput } from '../../../src/lib/bootstrapper/kubeadm/kubeadm-join-config.js'
import { createCsr } from '../../../src/lib/x509/csr.js'

const kms = new ClusterKms(MASTER.key, MASTER.salt)
const DISK_UUID = '0A1B2C3D-0000-4000-8000-000000000000'
const TOKEN = 'abcdef.0123456789abcdef'
const FAST_RETRY = { initialDelayMs: 5, maxDelayMs: 20, jitter: 0.2 }

/** What one join service does with a request. */
type Behaviour =
  | 'ticket'
  | 'refuse-attestation'
  | 'unavailable'
  | 'cert-for-another-key'
  | 'bad-pki-name'
  | 'short-disk-key'
  | 'no-master-secret'
  | 'unknown-service-file'

let ca: ClusterCa
before(async () => (ca = await makeClusterCa()))

/** A join service stand-in: signs the request's real CSR with the cluster CA, as the join service would. */
function stubJoinService(
  script: Record<string, Behaviour[]>,
  events: string[],
  requests: IssueJoinTicketRequest[],
) {
  const signer = () =>
    createKubeletSigner({ caCertPem: ca.caCertPem, caKeyPem: ca.caKeyPem, clock: () => new Date() })
  return async (endpoint: string, req: IssueJoinTicketRequest): Promise<IssueJoinTicketResponse> => {
    events.push(`request ${endpoint}`)
    requests.push(req)
    const behaviour = script[endpoint]?.shift() ?? 'unavailable'
    if (behaviour === 'refuse-attestation')
      throw Object.assign(new Error('16 UNAUTHENTICATED'), {
        code: status.UNAUTHENTICATED,
        details: `${REFUSAL_PREFIX}measurement validation failed:\nuntrusted measurement value 00 at index 4`,
      })
    if (behaviour === 'unavailable')
      throw Object.assign(new Error('14 UNAVAILABLE'), {
        code: status.UNAVAILABLE,
        details: 'No connection established. Last error: Error: connect ECONNREFUSED 10.0.0.1:30090',
      })
    const csr = parseCsr(req.certificateRequest)
    const other = behaviour === 'cert-for-another-key' ? parseCsr(await anotherCsr()) : csr
    const cert = await signer().sign({ ...csr, publicKeyDer: other.publicKeyDer })
    return {
      stateDiskKey:
        behaviour === 'short-disk-key' ? Buffer.alloc(16) : kms.diskKey(req.diskUuid.toLowerCase()),
      measurementSalt: MEASUREMENT_SALT,
      measurementSecret: kms.measurementSecret(),
      kubeletCert: Buffer.from(toPem(cert)),
      apiServerEndpoint: '10.0.0.1:6443',
      token: TOKEN,
      discoveryTokenCaCertHash: ca.caCertHash,
      controlPlaneFiles: req.isControlPlane
        ? [
            ...ca.controlPlaneFiles,
            ...SERVICE_FILES.filter(
              (f) => behaviour !== 'no-master-secret' || f.name !== 'constellation/mastersecret',
            ),
            ...(behaviour === 'unknown-service-file'
              ? [{ name: 'constellation/authorized_keys', data: Buffer.from('x') }]
              : []),
            ...(behaviour === 'bad-pki-name' ? [{ name: '../../etc/shadow', data: Buffer.from('x') }] : []),
          ]
        : [],
      kubernetesVersion: 'v1.31.13',
      kubernetesComponents: COMPONENTS,
      authorizedCaPublicKey: Buffer.alloc(0),
      hostCertificate: Buffer.alloc(0),
    }
  }
}

async function anotherCsr(): Promise<Buffer> {
  const { privateKey } = await generateEcdsaP256KeyPair()
  return createCsr({ key: privateKey, subject: [['CN', 'system:node:other']], ipSans: ['10.0.0.9'] })
}

interface Setup {
  role?: 'worker' | 'control-plane'
  script: Record<string, Behaviour[]>
  lockTakenByInit?: boolean
  kubeadmFails?: boolean
  endpoints?: string[]
}

async function setUp(dir: string, tc: Setup) {
  const events: string[] = []
  const requests: IssueJoinTicketRequest[] = []
  const lines: string[] = []
  const extended: Buffer[] = []
  const lock = new NodeLock({
    extendPcr: (_index, digest) => Promise.resolve(void (events.push('lock'), extended.push(digest))),
  })
  if (tc.lockTakenByInit) {
    await lock.tryLockOnce(Buffer.from('the cluster Init started'))
    events.length = 0
  }
  const joined: KubeadmJoinInput[] = []
  let locked = 0
  const deps: JoinClientDeps = {
    self: { name: 'Node_1', role: tc.role ?? 'worker', vpcIP: '10.0.0.5' },
    endpoints: tc.endpoints ?? ['10.0.0.1:30090', '10.0.0.2:30090'],
    requestTicket: stubJoinService(tc.script, events, requests),
    disk: {
      uuid: () => Promise.resolve(void events.push('uuid')).then(() => DISK_UUID),
      changeKey: (_old, key) => Promise.resolve(void events.push(`changeKey ${key.length}`)),
      writeMark: (mark) => Promise.resolve(void events.push(`mark ${mark}`)),
    },
    paths: nodePaths(dir),
    stageComponents: () => {
      events.push('stage')
      return Promise.resolve({
        install: () => Promise.resolve(void events.push('install')),
        discard: () => Promise.resolve(void events.push('discard')),
      })
    },
    kubeadmJoin: (input) => {
      events.push('kubeadm join')
      joined.push(input)
      return tc.kubeadmFails ? Promise.reject(new Error('kubeadm join exited 1')) : Promise.resolve()
    },
    log: createLogger({ format: 'json', write: (l) => lines.push(l) }),
    retry: FAST_RETRY,
  }
  const client = new NodeJoinClient(deps)
  const start = () => client.start(lock, () => void (locked++, events.push('onLocked')))
  return { client, start, deps, events, requests, lines, extended, joined, lock, locked: () => locked }
}

const mode = async (file: string) => (await stat(file)).mode & 0o777

/** Rounds 100 ms apart, doubling without jitter; the waits are counted, not waited. */
function countWaits(deps: JoinClientDeps): number[] {
  const slept: number[] = []
  deps.retry = {
    initialDelayMs: 100,
    maxDelayMs: 60_000,
    jitter: 0,
    sleep: async (ms) => void slept.push(ms),
  }
  return slept
}

describe('NodeJoinClient on stub parts', function () {
  this.timeout(10_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  const cases: Record<string, Setup & { wantEvents: string[] }> = {
    'worker: the second join service answers; lock, re-key + install, kubeadm join': {
      script: { '10.0.0.1:30090': ['unavailable'], '10.0.0.2:30090': ['ticket'] },
      wantEvents: [
        'uuid',
        'request 10.0.0.1:30090',
        'request 10.0.0.2:30090',
        'stage',
        'lock',
        'onLocked',
        'changeKey 32',
        'install',
        'mark initialized',
        'kubeadm join',
        'discard',
      ],
    },
    'refused attestation, then a ticket in the next round': {
      script: {
        '10.0.0.1:30090': ['refuse-attestation', 'ticket'],
        '10.0.0.2:30090': ['refuse-attestation'],
      },
      wantEvents: [
        'uuid',
        'request 10.0.0.1:30090',
        'request 10.0.0.2:30090',
        'uuid',
        'request 10.0.0.1:30090',
        'stage',
        'lock',
        'onLocked',
        'changeKey 32',
        'install',
        'mark initialized',
        'kubeadm join',
        'discard',
      ],
    },
    'a certificate for another key is not used: that service is skipped, the next one asked': {
      script: { '10.0.0.1:30090': ['cert-for-another-key'], '10.0.0.2:30090': ['ticket'] },
      wantEvents: [
        'uuid',
        'request 10.0.0.1:30090',
        'request 10.0.0.2:30090',
        'stage',
        'lock',
        'onLocked',
        'changeKey 32',
        'install',
        'mark initialized',
        'kubeadm join',
        'discard',
      ],
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const node = await setUp(dir, tc)
      await node.start()
      expect(node.events).to.deep.equal(tc.wantEvents)
      expect(node.locked()).to.equal(1)
    })

  it('asks as the node: its name, address and role in a verified CSR, its disk UUID', async () => {
    const node = await setUp(dir, { script: { '10.0.0.1:30090': ['ticket'] } })
    await node.start()
    const [req] = node.requests
    expect(req).to.deep.include({ diskUuid: DISK_UUID, isControlPlane: false })
    expect(parseCsr(req?.certificateRequest ?? Buffer.alloc(0))).to.deep.include({
      organizations: ['system:nodes'],
      commonNames: ['system:node:node-1'],
      key: { type: 'ec', namedCurve: 'prime256v1' },
      ipAddresses: ['10.0.0.5'],
      dnsNames: ['node-1'],
    })
  })

  it('locks with the cluster ID from the ticket: PCR 15 gets SHA256(HKDF(secret, salt, "key-clusterID"))', async () => {
    const node = await setUp(dir, { script: { '10.0.0.1:30090': ['ticket'] } })
    await node.start()
    const clusterId = deriveClusterId(kms.measurementSecret(), MEASUREMENT_SALT)
    expect(node.extended).to.deep.equal([createHash('sha256').update(clusterId).digest()])
  })

  it('worker: node state, kubelet certificate and key (0600), no CA files; kubeadm gets the ticket', async () => {
    const node = await setUp(dir, { script: { '10.0.0.1:30090': ['ticket'] } })
    await node.start()
    const paths = nodePaths(dir)
    expect(JSON.parse(await readFile(paths.nodeStateFile, 'utf8'))).to.deep.equal({
      Role: 'Worker',
      MeasurementSalt: MEASUREMENT_SALT.toString('base64'),
      DiskUUID: DISK_UUID.toLowerCase(),
    })
    expect(await mode(paths.kubeletClientCert)).to.equal(0o600)
    expect(await mode(paths.kubeletClientKey)).to.equal(0o600)
    expect(await readFile(paths.kubeletClientKey, 'utf8')).to.match(/^-----BEGIN EC PRIVATE KEY-----/)
    await expect(stat(path.join(paths.kubernetesPki, 'ca.key'))).to.be.rejected
    expect(node.joined).to.deep.equal([
      {
        nodeName: 'node-1',
        nodeIP: '10.0.0.5',
        apiServerEndpoint: '10.0.0.1:6443',
        token: TOKEN,
        caCertHash: ca.caCertHash,
        controlPlane: false,
        clusterVersion: 'v1.31.13',
      },
    ])
  })

  it('control plane: every CA file under the PKI directory, 0600', async () => {
    const node = await setUp(dir, { role: 'control-plane', script: { '10.0.0.1:30090': ['ticket'] } })
    await node.start()
    const pki = nodePaths(dir).kubernetesPki
    for (const file of ca.controlPlaneFiles) {
      expect(await readFile(path.join(pki, file.name))).to.deep.equal(file.data)
      expect(await mode(path.join(pki, file.name)), file.name).to.equal(0o600)
    }
    expect(node.joined[0]?.controlPlane).to.equal(true)
    expect(JSON.parse(await readFile(nodePaths(dir).nodeStateFile, 'utf8')).Role).to.equal('ControlPlane')
    // what its own key and join services need, where they read it, 0600; never under the PKI
    const paths = nodePaths(dir)
    const wanted: Array<[string, Buffer]> = [
      [paths.masterSecretFile, MASTER.key],
      [paths.masterSaltFile, MASTER.salt],
      [paths.joinConfigFile, SERVICE_FILES[2]?.data ?? Buffer.alloc(0)],
      [paths.measurementSecretFile, kms.measurementSecret()],
      [paths.measurementSaltFile, MEASUREMENT_SALT],
    ]
    for (const [file, data] of wanted) {
      expect(await readFile(file), file).to.deep.equal(data)
      expect(await mode(file), file).to.equal(0o600)
    }
    expect(JSON.parse(await readFile(paths.componentsFile, 'utf8'))).to.deep.equal(COMPONENTS)
    await expect(readFile(path.join(pki, 'constellation/mastersecret'))).to.be.rejected
  })

  const refusedTickets: Record<string, { behaviour: Behaviour; role?: 'control-plane'; want: RegExp }> = {
    'a CA file name that leaves the PKI directory': {
      behaviour: 'bad-pki-name',
      role: 'control-plane',
      want: /control_plane_files: "\.\.\/\.\.\/etc\/shadow": contains "\.\."/,
    },
    'no master secret for a control plane': {
      behaviour: 'no-master-secret',
      role: 'control-plane',
      want: /control_plane_files: no constellation\/mastersecret; a control plane runs its own key service/,
    },
    'a service file this node does not know': {
      behaviour: 'unknown-service-file',
      role: 'control-plane',
      want: /control_plane_files: "constellation\/authorized_keys": not a service file this node knows/,
    },
    'a disk key of the wrong length': {
      behaviour: 'short-disk-key',
      want: /state_disk_key: 16 bytes, want 32/,
    },
  }
  for (const [name, tc] of Object.entries(refusedTickets))
    it(`a ticket with ${name} is not used: no lock, logged, asked again`, async () => {
      const node = await setUp(dir, { role: tc.role, script: { '10.0.0.1:30090': [tc.behaviour, 'ticket'] } })
      await node.start()
      const warning = node.lines
        .map((l) => JSON.parse(l) as { msg: string; reason?: string })
        .find((l) => l.msg === 'No usable join ticket from this join service')
      expect(warning?.reason).to.match(tc.want)
      expect(node.events.filter((e) => e === 'lock')).to.have.length(1)
      expect(node.events.indexOf('lock')).to.be.greaterThan(node.events.lastIndexOf('request 10.0.0.2:30090'))
    })

  it("logs a refused attestation with the join service's reason, never a secret", async () => {
    const node = await setUp(dir, { script: { '10.0.0.1:30090': ['refuse-attestation', 'ticket'] } })
    await node.start()
    const refused = node.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.endpoint)
    expect(refused).to.deep.include({
      level: 'warn',
      msg: "The join service refused this node's attestation",
      endpoint: '10.0.0.1:30090',
    })
    expect(String(refused?.reason)).to.match(/measurement validation failed/)
    const all = node.lines.join('\n')
    expect(all).not.to.include(TOKEN)
    expect(all).not.to.include(kms.diskKey(DISK_UUID.toLowerCase()).toString('hex'))
    expect(all).not.to.include(kms.measurementSecret().toString('base64'))
  })

  it('Init holds the lock: the ticket is not used, nothing changes, start() resolves', async () => {
    const node = await setUp(dir, { lockTakenByInit: true, script: { '10.0.0.1:30090': ['ticket'] } })
    await node.start()
    expect(node.events).to.deep.equal(['uuid'])
    expect(node.locked()).to.equal(0)
  })

  it('kubeadm join fails after the lock: start() rejects, the node is marked unusable in the log', async () => {
    const node = await setUp(dir, { kubeadmFails: true, script: { '10.0.0.1:30090': ['ticket'] } })
    const err = await node.start().catch((e: unknown) => e)
    expect(err).to.be.instanceOf(JoinFailedError)
    expect((err as Error).message).to.equal(
      'joining failed after the node lock was taken: running kubeadm join',
    )
    expect(node.events.filter((e) => e === 'request 10.0.0.1:30090')).to.have.length(1)
    expect(node.lines.some((l) => l.includes('Join failed; this node cannot be used'))).to.equal(true)
  })

  it('stop() while asking: start() resolves, no lock, later stops are no-ops', async () => {
    const node = await setUp(dir, { script: {} })
    const started = node.start()
    while (node.requests.length < 4) await new Promise((r) => setTimeout(r, 5))
    await node.client.stop()
    await started
    await node.client.stop()
    expect(node.lock.isLocked).to.equal(false)
    expect(node.events).not.to.include('stage')
  })

  it('while no join service listens it asks at its first pace and says so once; a refusal backs off again', async () => {
    const node = await setUp(dir, {
      endpoints: ['10.0.0.1:30090'],
      script: {
        '10.0.0.1:30090': [
          ...Array<Behaviour>(4).fill('unavailable'),
          'refuse-attestation',
          'refuse-attestation',
          'ticket',
        ],
      },
    })
    const slept = countWaits(node.deps)
    await node.start()
    expect(slept).to.deep.equal([100, 100, 100, 100, 100, 200])
    const said = node.lines.map((l) => JSON.parse(l) as { msg: string; reason?: string })
    expect(said.filter((l) => l.msg.startsWith('No join service listens yet'))).to.have.length(1)
    expect(said.filter((l) => /ECONNREFUSED/.test(l.reason ?? ''))).to.have.length(1)
    expect(said.filter((l) => l.msg === "The join service refused this node's attestation")).to.have.length(2)
    expect(said.filter((l) => l.msg === 'No join ticket yet; asking again')).to.have.length(2)
    expect(node.locked()).to.equal(1)
  })

  it('a request whose connection was refused sent nothing: its CSR serves the next; one that reached a service does not', async () => {
    const node = await setUp(dir, {
      endpoints: ['10.0.0.1:30090'],
      script: { '10.0.0.1:30090': ['unavailable', 'unavailable', 'refuse-attestation', 'ticket'] },
    })
    await node.start()
    const csrs = node.requests.map((r) => r.certificateRequest.toString('hex'))
    expect(csrs).to.have.length(4)
    expect(csrs[1], 'after a refused connection').to.equal(csrs[0])
    expect(csrs[2], 'after a refused connection').to.equal(csrs[0])
    expect(csrs[3], 'after a join service refused the attestation').to.not.equal(csrs[2])
    // the ticket's certificate is for the last CSR's key, which the node keeps
    expect(node.locked()).to.equal(1)
  })

  it('one join service that refuses the connection and one that answers: the backoff grows', async () => {
    const node = await setUp(dir, {
      script: {
        '10.0.0.1:30090': ['unavailable', 'unavailable', 'unavailable'],
        '10.0.0.2:30090': ['refuse-attestation', 'refuse-attestation', 'ticket'],
      },
    })
    const slept = countWaits(node.deps)
    await node.start()
    expect(slept).to.deep.equal([100, 200])
  })

  it('no endpoint in the metadata: nothing asked, start() resolves at once', async () => {
    const node = await setUp(dir, { script: {}, endpoints: [] })
    await node.start()
    expect(node.events).to.deep.equal([])
    expect(node.lines.join('\n')).to.include('No join service to ask')
  })
})
