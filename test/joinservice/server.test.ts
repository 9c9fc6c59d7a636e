/**
 * The join service over real gRPC and the client-attested aTLS listener on loopback, with the fake
 * attestation authority (no swtpm) and the measurements store reading a real join-config file.
 */
import * as grpc from '@grpc/grpc-js'
import path from 'node:path'
import { InMemoryStateDisks } from '../support/state-disks.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import {
  createFakeAttestation,
  DEFAULT_FAKE_AK_NAME,
  type FakeAttestation,
} from '../support/fake-attestation.js'
import {
  APIClient,
  type IssueJoinTicketRequest,
  type IssueJoinTicketResponse,
  type IssueRejoinTicketResponse,
} from '../../src/gen/join.js'
import {
  AttestationError,
  compareMeasurements,
  type Issuer,
  type Measurements,
  type Validator,
  encodeJoinConfig,
} from '../../src/lib/attestation/index.js'
import { clientOn, isAttestationFailure, openAttestedClientChannel } from '../../src/lib/atls/index.js'
import { ClusterKms, KeyServiceUnreachableError } from '../../src/lib/kms/index.js'
import { createLogger, writeFileAtomic } from '../../src/lib/system/index.js'
import {
  createJoinService,
  createKubeletSigner,
  MeasurementsStore,
  staticMembers,
  validatorSourceFrom,
} from '../../src/lib/joinservice/index.js'
import { type ClusterCa } from '../../src/lib/joinservice/cluster-ca.js'
import { type ControlPlaneTurns } from '../../src/lib/joinservice/control-plane-turns.js'
import { type DataKeysGetter } from '../../src/lib/joinservice/ticket.js'
import { type JoinService } from '../../src/lib/joinservice/server.js'
import type { CsrFields } from '../../src/lib/joinservice/csr-policy.js'
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
} from './fakes.js'

const UUID = '0b4f5e2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b'
const uuid = (i: number) => `0b4f5e2a-1c3d-4e5f-8a9b-${String(i).padStart(12, '0')}`
/**
 * The cluster's metadata: each node has a loopback address of its own, which its connections leave
 * from (Linux lets a client bind any 127/8 address). worker-1 is 127.0.0.1, the default source.
 */
const ADDRESSES: Record<string, string> = {
  'worker-1': '127.0.0.1',
  'worker-7': '127.0.0.7',
  'cp-1': '127.0.0.11',
  'cp-2': '127.0.0.12',
  ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`worker-${i + 100}`, `127.0.1.${i + 1}`])),
}
const MEMBERS = Object.entries(ADDRESSES).map(([name, vpcIP]) => ({
  name,
  role: name.startsWith('cp-') ? ('control-plane' as const) : ('worker' as const),
  vpcIP,
}))
/** The server is not attested in this direction; a fixed name keeps the IP address out of SNI. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const kms = new ClusterKms(MASTER.key, MASTER.salt)
interface AuditLine {
  msg: string
  component?: string
  rpc?: string
  node?: string
  role?: string
  peer?: string
  verdict?: string
  reason?: string
}

/**
 * Validators as production builds them from the store's set: the fake authority checks signature,
 * nonce and age, then the join-config's measurements decide (the fake's own golden set always passes).
 */
const validatorFor =
  (fake: FakeAttestation) =>
  (m: Measurements): Validator => {
    const inner = fake.validator()
    return {
      variant: inner.variant,
      oid: inner.oid,
      validate: async (document, nonce) => {
        const result = await inner.validate(document, nonce)
        const { errors } = compareMeasurements(m, result.pcrs)
        if (errors.length > 0)
          throw new AttestationError(`measurement validation failed:\n${errors.join('\n')}`)
        return result
      },
    }
  }

describe('join service over aTLS', function () {
  let dir: string
  let cleanup: () => Promise<void>
  let fake: FakeAttestation
  let ca: ClusterCa
  let store: MeasurementsStore
  let service: JoinService
  let target: string
  let lines: string[]
  let tokens: FakeTokenIssuer
  let keysAsked: string[]
  let keyService: DataKeysGetter
  let stateDisks: InMemoryStateDisks

  before(async () => (ca = await makeClusterCa()))
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    fake = createFakeAttestation()
    lines = []
    tokens = new FakeTokenIssuer()
    keysAsked = []
    keyService = realDataKeys()
    stateDisks = new InMemoryStateDisks()
    await writeFileAtomic(path.join(dir, 'join-config.json'), encodeJoinConfig(fake.measurements))
  })
  afterEach(async () => {
    await service?.stop(500)
    store?.close()
    await cleanup()
  })

  async function start(
    opts: { listen?: string; workerConcurrency?: number; controlPlaneTurns?: ControlPlaneTurns } = {},
  ) {
    const logger = createLogger({ format: 'json', write: (l) => lines.push(l) })
    store = await MeasurementsStore.open({
      file: path.join(dir, 'join-config.json'),
      logger,
      pollIntervalMs: 60_000,
    })
    service = createJoinService({
      listen: opts.listen ?? '127.0.0.1:0',
      validatorSource: validatorSourceFrom(store, validatorFor(fake)),
      // a spy around the data keys: every ID asked for
      keyService: (keys) => (keysAsked.push(...keys.map((k) => k.id)), keyService(keys)),
      tokens,
      kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
      parseCsr: fakeCsrParser,
      ca,
      controlPlaneServiceFiles: serviceFiles,
      kubernetes: async () => ({ version: 'v1.31.13', components: COMPONENTS }),
      stateDisks,
      cluster: { measurementSalt: MEASUREMENT_SALT, apiServerEndpoint: '10.0.0.1:6443' },
      members: staticMembers(MEMBERS),
      controlPlaneTurns: opts.controlPlaneTurns,
      clock: () => new Date(),
      logger,
      limits: { workerConcurrency: opts.workerConcurrency },
    })
    const address = await service.start()
    target = `127.0.0.1:${address.split(':').pop()}`
  }

  const request = async (csr: CsrFields, isControlPlane = false): Promise<IssueJoinTicketRequest> => ({
    diskUuid: UUID,
    certificateRequest: encodeFakeCsr(csr),
    isControlPlane,
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
  })

  /** One JoinClient attempt: a fresh challenge and attestation on a fresh connection, one call, channel closed. */
  async function call<Res>(
    issuer: Issuer,
    invoke: (client: APIClient, done: (err: grpc.ServiceError | null, res: Res) => void) => void,
    from?: string,
  ): Promise<Res> {
    const channel = await openAttestedClientChannel(target, issuer, { localAddress: from })
    try {
      return await new Promise<Res>((resolve, reject) =>
        invoke(clientOn(channel, APIClient), (err, res) => (err ? reject(err) : resolve(res))),
      )
    } finally {
      channel.close()
    }
  }
  const options = () => ({ deadline: Date.now() + 10_000 })
  /** A join from `node`'s own address (worker-1's unless named). */
  const join = (req: IssueJoinTicketRequest, issuer: Issuer = fake.issuer(), node = 'worker-1') =>
    call<IssueJoinTicketResponse>(
      issuer,
      (c, done) => c.issueJoinTicket(req, new grpc.Metadata(), options(), done),
      ADDRESSES[node],
    )
  const rejoin = (node: string, issuer: Issuer = fake.issuer()) =>
    call<IssueRejoinTicketResponse>(
      issuer,
      (c, done) => c.issueRejoinTicket({ diskUuid: UUID }, new grpc.Metadata(), options(), done),
      ADDRESSES[node],
    )
  /** `node`'s honest request from its address, for disk `diskUuid`. */
  const requestOf = async (node: string, diskUuid = UUID) => ({
    ...(await request(await nodeCsr(node, ADDRESSES[node] ?? ''), node.startsWith('cp-'))),
    diskUuid,
  })
  const failureOf = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('the call succeeded'),
      (e: unknown) => e as grpc.ServiceError,
    )
  const audits = () =>
    lines.map((l) => JSON.parse(l) as AuditLine).filter((l) => l.component === 'joinservice.audit')

  it('issues a ticket to an attested worker, its kubelet certificate for the address it came from', async () => {
    await start()
    const ticket = await join(await request(await nodeCsr('worker-1', '127.0.0.1')))
    expect(ticket.stateDiskKey).to.deep.equal(kms.diskKey(UUID))
    expect(ticket.measurementSecret).to.deep.equal(kms.measurementSecret())
    expect(ticket.token).to.equal(tokens.issued[0])
    expect(tokens.issuedFor, 'the token names its node (node remove deletes it)').to.deep.equal(['worker-1'])
    expect(ticket.discoveryTokenCaCertHash).to.equal(ca.caCertHash)
    expect(ticket.controlPlaneFiles).to.deep.equal([])
    expect(certOf(ticket.kubeletCert).subjectAltName).to.equal('DNS:worker-1, IP Address:127.0.0.1')
    const [line, ...more] = audits()
    expect(more).to.have.length(0)
    expect(line).to.include({
      msg: 'Join request',
      rpc: 'IssueJoinTicket',
      node: 'worker-1',
      role: 'worker',
      verdict: 'ok',
    })
    expect(line?.peer).to.match(/^127\.0\.0\.1:\d+$/)
    expect(line?.reason).to.equal(undefined)
  })

  it('refuses a node whose measurements do not match: no secret, no key asked, audit says refused', async () => {
    await start()
    const err = await failureOf(
      join(await request(await nodeCsr('worker-1', '127.0.0.1')), fake.issuer('wrong-measurements')),
    )
    expect(err.code).to.equal(grpc.status.UNAUTHENTICATED)
    expect(isAttestationFailure(err)).to.be.true
    expect(err.details).to.match(/measurement validation failed/)
    expect(keysAsked, 'key service spy').to.deep.equal([])
    expect(tokens.issued).to.deep.equal([])
    const [line] = audits()
    expect(line).to.include({ rpc: 'Attest', node: '', role: 'unknown', verdict: 'refused' })
    expect(line?.reason).to.match(/measurement validation failed/)
    expect(line?.peer).to.match(/^127\.0\.0\.1:\d+$/)
  })

  it('refuses a replayed attestation (a document from an earlier connection)', async () => {
    await start()
    const honest = fake.issuer()
    let recorded: Buffer | undefined
    const recording: Issuer = { ...honest, issue: async (u, n) => (recorded = await honest.issue(u, n)) }
    await join(await request(await nodeCsr('worker-1', '127.0.0.1')), recording)
    const replaying: Issuer = { ...honest, issue: () => Promise.resolve(recorded!) }
    const err = await failureOf(join(await request(await nodeCsr('worker-2', '127.0.0.1')), replaying))
    expect(err.code).to.equal(grpc.status.UNAUTHENTICATED)
    expect(err.details).to.match(/bound to another nonce \(replayed/)
    expect(audits().map((l) => [l.rpc, l.verdict])).to.deep.equal([
      ['IssueJoinTicket', 'ok'],
      ['Attest', 'refused'],
    ])
  })

  it('refuses a CSR for another address, naming the IP SAN, before asking for any key', async () => {
    await start()
    const err = await failureOf(join(await request(await nodeCsr('worker-1', '10.0.0.9'))))
    expect(err.code).to.equal(grpc.status.PERMISSION_DENIED)
    expect(err.details).to.match(
      /IP SAN: 10\.0\.0\.9 is not the address the request came from \(127\.0\.0\.1\)/,
    )
    expect(keysAsked).to.deep.equal([])
    expect(audits()[0]).to.include({ node: 'worker-1', role: 'worker', verdict: 'refused' })
  })

  it('takes an IPv4 node on a dual-stack listener, whose address it sees IPv4-mapped', async () => {
    await start({ listen: '[::]:0' })
    const ticket = await join(await request(await nodeCsr('worker-1', '127.0.0.1')))
    expect(certOf(ticket.kubeletCert).subjectAltName).to.equal('DNS:worker-1, IP Address:127.0.0.1')
    expect(audits()[0]?.peer).to.match(/^::ffff:127\.0\.0\.1:\d+$/)
  })

  it('enforces updated measurements without a restart: refused, then accepted', async () => {
    const stale = new Map(fake.measurements)
    stale.set(4, { expected: Buffer.alloc(32, 0xee), warnOnly: false })
    await writeFileAtomic(path.join(dir, 'join-config.json'), encodeJoinConfig(stale))
    await start()
    const req = await request(await nodeCsr('worker-1', '127.0.0.1'))
    expect((await failureOf(join(req))).details).to.match(/untrusted measurement value .* at index 4/)
    await writeFileAtomic(path.join(dir, 'join-config.json'), encodeJoinConfig(fake.measurements))
    await store.reload() // the watch would do it too; this keeps the test free of timing
    expect((await join(req)).stateDiskKey).to.deep.equal(kms.diskKey(UUID))
  })

  /** A key service that takes a while and counts how many joins it serves at once (one call per join). */
  function slowKeyService(ms: number) {
    const real = realDataKeys()
    const seen = { active: 0, maxActive: 0 }
    keyService = async (keys) => {
      seen.maxActive = Math.max(seen.maxActive, ++seen.active)
      await sleep(ms)
      seen.active--
      return real(keys)
    }
    return seen
  }

  it('serializes two control planes joining at once; both get the PKI', async () => {
    const seen = slowKeyService(50)
    await start()
    const [a, b] = await Promise.all([
      join(await requestOf('cp-1', uuid(1)), fake.issuer(), 'cp-1'),
      join(await requestOf('cp-2', uuid(2)), fake.issuer(), 'cp-2'),
    ])
    expect(seen.maxActive, 'key requests at once: one join’s').to.equal(1)
    for (const t of [a, b])
      expect(t.controlPlaneFiles.map((f) => f.name)).to.include.members(['ca.key', 'etcd/ca.key'])
    expect(new Set(tokens.issued).size).to.equal(2)
    expect(audits().map((l) => [l.role, l.verdict])).to.deep.equal([
      ['control-plane', 'ok'],
      ['control-plane', 'ok'],
    ])
  })

  it('runs worker joins with bounded concurrency; all succeed with distinct tokens and disk keys', async () => {
    const seen = slowKeyService(300) // long enough that joins pile up behind the bound on a busy machine
    await start({ workerConcurrency: 3 })
    const uuids = Array.from({ length: 12 }, (_, i) => uuid(i))
    const tickets = await Promise.all(
      uuids.map(async (diskUuid, i) =>
        join(await requestOf(`worker-${i + 100}`, diskUuid), fake.issuer(), `worker-${i + 100}`),
      ),
    )
    expect(seen.maxActive, 'joins at the key service at once: the bound').to.equal(3)
    expect(new Set(tickets.map((t) => t.token)).size).to.equal(12)
    expect(new Set(tickets.map((t) => t.stateDiskKey.toString('hex'))).size).to.equal(12)
    tickets.forEach((t, i) => expect(t.stateDiskKey).to.deep.equal(kms.diskKey(uuids[i] ?? '')))
  })

  it('answers UNAVAILABLE, naming the step, while the key service is down', async () => {
    keyService = () =>
      Promise.reject(new KeyServiceUnreachableError('127.0.0.1:9000', 'is unreachable: ECONNREFUSED'))
    await start()
    const err = await failureOf(join(await request(await nodeCsr('worker-1', '127.0.0.1'))))
    expect(err.code).to.equal(grpc.status.UNAVAILABLE)
    expect(err.details).to.match(
      /^issuing ticket: getting the disk key and the measurement secret from the key service failed$/,
    )
    expect(audits()[0]).to.include({ verdict: 'error' })
  })

  it('issues a rejoin ticket for its disk to the node it was recorded for: the disk key and measurement secret only', async () => {
    await start()
    stateDisks.disks.set(UUID, {
      node: 'worker-7',
      role: 'worker',
      address: '127.0.0.7',
      tpm: DEFAULT_FAKE_AK_NAME.toString('hex'),
      recordedAt: new Date().toISOString(),
    })
    const ticket = await rejoin('worker-7')
    expect(ticket).to.deep.equal({
      stateDiskKey: kms.diskKey(UUID),
      measurementSecret: kms.measurementSecret(),
    })
    expect(audits()[0]).to.include({
      rpc: 'IssueRejoinTicket',
      verdict: 'ok',
      node: 'worker-7',
      role: 'worker',
    })
  })

  it("refuses another member's rejoin for a disk, and a fresh TPM at the node's own address", async () => {
    await start()
    await join(await requestOf('worker-7'), fake.issuer(), 'worker-7')
    keysAsked.length = 0
    const fromOther = await failureOf(rejoin('worker-1'))
    expect([fromOther.code, fromOther.details]).to.deep.equal([
      grpc.status.PERMISSION_DENIED,
      `disk_uuid: ${UUID} is the state disk of node "worker-7", not of "worker-1" (the metadata's instance at 127.0.0.1)`,
    ])
    const freshTpm = fake.issuer('none', Buffer.concat([Buffer.from([0, 0x0b]), Buffer.alloc(32, 0xdd)]))
    const impostor = await failureOf(rejoin('worker-7', freshTpm))
    expect(impostor.code).to.equal(grpc.status.PERMISSION_DENIED)
    expect(impostor.details).to.match(/was recorded with another TPM/)
    expect(keysAsked, 'no key derived for either').to.deep.equal([])
    expect(audits().map((l) => [l.rpc, l.node, l.verdict])).to.deep.equal([
      ['IssueJoinTicket', 'worker-7', 'ok'],
      ['IssueRejoinTicket', 'worker-1', 'refused'],
      ['IssueRejoinTicket', 'worker-7', 'refused'],
    ])
  })

  it('refuses a rejoin for a disk it does not know, and audits the refusal', async () => {
    await start()
    const err = await failureOf(rejoin('worker-1'))
    expect(err.code).to.equal(grpc.status.PERMISSION_DENIED)
    expect(err.details).to.match(/^disk_uuid: .* is not a state disk of this cluster/)
    expect(keysAsked).to.deep.equal([])
    expect(audits()[0]).to.include({
      rpc: 'IssueRejoinTicket',
      verdict: 'refused',
      node: 'worker-1',
      role: 'worker',
    })
  })

  it('refuses a caller at an address the metadata does not list, whatever its request says', async () => {
    await start()
    const err = await failureOf(
      call<IssueJoinTicketResponse>(
        fake.issuer(),
        async (c, done) =>
          c.issueJoinTicket(
            await request(await nodeCsr('cp-1', '127.0.0.99'), true),
            new grpc.Metadata(),
            options(),
            done,
          ),
        '127.0.0.99',
      ),
    )
    expect([err.code, err.details]).to.deep.equal([
      grpc.status.PERMISSION_DENIED,
      "peer address 127.0.0.99: the cluster's metadata lists no instance there; only its members may join",
    ])
    expect(keysAsked).to.deep.equal([])
    expect(audits()[0]).to.include({ rpc: 'IssueJoinTicket', node: '', verdict: 'refused' })
  })

  it('gives a control plane nothing of the PKI unless the metadata lists it as one: no key, no turn taken', async () => {
    const taken: string[] = []
    const turns: ControlPlaneTurns = {
      take: async (node) => (taken.push(node), { release: async () => {} }),
    }
    await start({ controlPlaneTurns: turns })
    const err = await failureOf(join(await request(await nodeCsr('worker-1', '127.0.0.1'), true)))
    expect([err.code, err.details]).to.deep.equal([
      grpc.status.PERMISSION_DENIED,
      `is_control_plane: true, but the cluster's metadata lists 127.0.0.1 as worker "worker-1"`,
    ])
    expect(keysAsked).to.deep.equal([])
    expect(taken).to.deep.equal([])
    expect(audits()[0]).to.include({ node: 'worker-1', role: 'worker', verdict: 'refused' })
  })

  it("gives a control plane's turn back when its ticket fails, and keeps it when the ticket is issued", async () => {
    const events: string[] = []
    const turns: ControlPlaneTurns = {
      take: async (node) => (
        events.push(`take ${node}`),
        { release: async () => void events.push(`release ${node}`) }
      ),
    }
    await start({ controlPlaneTurns: turns })
    await join(await requestOf('cp-1', uuid(1)), fake.issuer(), 'cp-1')
    keyService = () => Promise.reject(new KeyServiceUnreachableError('127.0.0.1:9000', 'is unreachable'))
    await failureOf(join(await requestOf('cp-2', uuid(2)), fake.issuer(), 'cp-2'))
    expect(events).to.deep.equal(['take cp-1', 'take cp-2', 'release cp-2'])
  })

  it('never writes a secret to its log or audit lines', async () => {
    await start()
    const tickets = [
      await join(await request(await nodeCsr('worker-1', '127.0.0.1'))),
      await join(await requestOf('cp-1', uuid(1)), fake.issuer(), 'cp-1'),
    ]
    await failureOf(join(await request(await nodeCsr('worker-2', '10.0.0.9'))))
    await failureOf(join(await request(await nodeCsr('worker-3', '127.0.0.1')), fake.issuer('wrong-nonce')))
    const log = lines.join('\n')
    expect(audits()).to.have.length(4)
    const secrets: Record<string, Buffer | string> = {
      'disk key': kms.diskKey(UUID),
      'measurement secret': kms.measurementSecret(),
      'master key': MASTER.key,
      'CA key': ca.caKeyPem.split('\n')[1] ?? '',
      ...Object.fromEntries(tickets.map((t, i) => [`token ${i}`, t.token])),
      ...Object.fromEntries(tickets.map((t, i) => [`token secret ${i}`, t.token.split('.')[1] ?? ''])),
    }
    for (const [what, secret] of Object.entries(secrets)) {
      const forms =
        typeof secret === 'string' ? [secret] : [secret.toString('hex'), secret.toString('base64')]
      for (const form of forms) expect(log, `${what} in the log`).not.to.contain(form)
    }
  })

  it('lets a join in flight finish when stopped, turns new ones away, then accepts nothing', async () => {
    const seen = slowKeyService(300)
    await start()
    const joining = join(await request(await nodeCsr('worker-1', '127.0.0.1')))
    while (seen.active === 0) await sleep(5) // the request reached the key service
    const stopping = service.stop(5_000)
    const late = await failureOf(join(await request(await nodeCsr('worker-2', '127.0.0.1'))))
    expect([late.code, late.details]).to.deep.equal([
      grpc.status.UNAVAILABLE,
      'join service is stopping; try another endpoint',
    ])
    await stopping
    expect((await joining).stateDiskKey).to.deep.equal(kms.diskKey(UUID))
    await service.done
    await expect(openAttestedClientChannel(target, fake.issuer(), { deadlineMs: 2_000 })).to.be.rejected
  })

  it('stops at once when idle, even with a node connected earlier', async () => {
    await start()
    await join(await request(await nodeCsr('worker-1', '127.0.0.1')))
    const began = Date.now()
    await service.stop(5_000)
    expect(Date.now() - began, 'no connection held it up').to.be.below(1_000)
  })
})
