/**
 * Join on loopback, everything real but kubeadm and the Kubernetes API: a join service (gRPC over
 * the client-attested aTLS, its measurements in a join-config file), the key service on its own
 * port, and a joining node daemon (its own swtpm, a LUKS2 image under cryptsetup, components from
 * a local server, the kubeadm contract fake against FakeKubeApiDir).
 */
import { randomUUID, X509Certificate } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import {
  createIssuer,
  createValidator,
  clusterIdPcrValue,
  type Measurements,
  encodeJoinConfig,
} from '../../../src/lib/attestation/index.js'
import { attestedJoinTicketRequester } from '../../../src/lib/bootstrapper/index.js'
import { CryptsetupDisk } from '../../../src/lib/statedisk/index.js'
import {
  createJoinService,
  createKubeletSigner,
  MeasurementsStore,
  staticMembers,
  validatorSourceFrom,
} from '../../../src/lib/joinservice/index.js'
import { type ClusterCa } from '../../../src/lib/joinservice/cluster-ca.js'
import { type JoinService } from '../../../src/lib/joinservice/server.js'
import { ClusterKms, createKeyService, deriveClusterId, type KeyService } from '../../../src/lib/kms/index.js'
import { KeyServiceClient } from '../../../src/lib/kms/keyservice-client.js'
import type { NodeMember } from '../../../src/lib/nodeconfig/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { createLogger, createRunner, writeFileAtomic, type Logger } from '../../../src/lib/system/index.js'
import { extendPcr, readPcrs, type OpenTpm } from '../../../src/lib/tpm/index.js'
import { createCsr, generateEcdsaP256KeyPair } from '../../../src/lib/x509/index.js'
import { createTokenIssuer } from '../../../src/lib/kube/index.js'
import { expect } from '../../support/chai.js'
import { FakeKubeApiDir } from '../../support/fake-kube-api-dir.js'
import { freePort, listeningHere } from '../../support/ports.js'
import { InMemoryStateDisks } from '../../support/state-disks.js'
import { startSwtpm, type SwtpmHandle } from '../../support/swtpm.js'
import { startLocalNode, type LocalNode } from '../../support/local-node.js'
import { makeClusterCa, MASTER, MEASUREMENT_SALT, serviceFiles } from '../../joinservice/fakes.js'
import { initRequest, pcr15, startNode, type RunningNode } from '../../support/init-client.js'

const kms = new ClusterKms(MASTER.key, MASTER.salt)
const API_SERVER = '127.0.0.1:6443'
/** The PCRs the default measurements enforce (constellation.md §6.4). */
const ENFORCED_PCRS = [4, 8, 9, 11, 12, 13, 15]
const FAST_RETRY = { initialDelayMs: 100, maxDelayMs: 400, jitter: 0.2 }

interface JoinServiceUnderTest {
  service: JoinService
  port: number
  store: MeasurementsStore
  joinConfigFile: string
  keyService: { port: number; start(): Promise<void>; stop(): Promise<void> }
  /** Every data key the join service asked the key service for: none for a refused node. */
  keysAsked: string[]
  api: FakeKubeApiDir
  lines: string[]
  stop(): Promise<void>
}

/** The measurements of the joining node's fresh TPM, as the operator would have sent them. */
async function measurementsOf(node: LocalNode): Promise<Measurements> {
  const pcrs = await readPcrs(node.swtpm.open, ENFORCED_PCRS)
  return new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
}

async function startJoinService(
  node: LocalNode,
  ca: ClusterCa,
  opts: { measurements: Measurements; keyServiceUp: boolean; members: NodeMember[] },
): Promise<JoinServiceUnderTest> {
  const dir = path.join(node.dir, 'joinservice')
  const lines: string[] = []
  const logger: Logger = createLogger({ format: 'json', write: (l) => lines.push(l) })
  const joinConfigFile = path.join(dir, 'join-config.json')
  await writeFileAtomic(joinConfigFile, encodeJoinConfig(opts.measurements))
  const store = await MeasurementsStore.open({ file: joinConfigFile, logger, pollIntervalMs: 100 })
  const api = new FakeKubeApiDir(path.join(dir, 'api'))
  await api.publishClusterInfo(ca.caCertPem, API_SERVER)
  const keyPort = await freePort()
  let keys: KeyService | undefined
  const keyService = {
    port: keyPort,
    start: async () => {
      keys = createKeyService({ listen: `127.0.0.1:${keyPort}`, masterSecret: MASTER, logger })
      await keys.start()
    },
    stop: async () => {
      await keys?.stop()
      keys = undefined
    },
  }
  if (opts.keyServiceUp) await keyService.start()
  const keysAsked: string[] = []
  const components = (await initRequest(node)).kubernetesComponents
  const stateDisks = new InMemoryStateDisks()
  const service = createJoinService({
    listen: '127.0.0.1:0',
    validatorSource: validatorSourceFrom(store, (m) => createValidator('qemu-vtpm', m)),
    keyService: async (wanted) => {
      keysAsked.push(...wanted.map((k) => k.id))
      // a channel per call: the key service of a test may start later, and grpc-js would back off
      const client = new KeyServiceClient(`127.0.0.1:${keyPort}`)
      try {
        return await client.getDataKeys(wanted, { timeoutMs: 2_000 })
      } finally {
        client.close()
      }
    },
    tokens: createTokenIssuer(api.registrar, () => new Date()),
    kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
    ca,
    controlPlaneServiceFiles: serviceFiles,
    kubernetes: () => Promise.resolve({ version: 'v1.31.13', components }),
    stateDisks,
    cluster: { measurementSalt: MEASUREMENT_SALT, apiServerEndpoint: API_SERVER },
    members: staticMembers(opts.members),
    clock: () => new Date(),
    logger,
  })
  const port = Number((await service.start()).split(':').pop())
  return {
    service,
    port,
    store,
    joinConfigFile,
    keyService,
    keysAsked,
    api,
    lines,
    stop: async () => {
      await service.stop(500)
      store.close()
      await keyService.stop()
    },
  }
}

/** The joining node's config: its role, the join service as its control-plane peer. */
function joiningNode(node: LocalNode, self: NodeMember, joinPort: number): LocalNode {
  return {
    ...node,
    nodeConfig: (listen) => {
      const config = node.nodeConfig(listen)
      return {
        ...config,
        joinService: { listen: `0.0.0.0:${joinPort}` },
        metadata: {
          provider: 'static',
          self,
          peers: [{ name: 'cp-0', role: 'control-plane', vpcIP: '127.0.0.1' }],
        },
      }
    },
  }
}

const logsOf = async (running: RunningNode) => (await running.logs.collect()).toString()

/** Waits until `check` holds, polling; fails with what `describe` says. */
async function eventually(
  check: () => Promise<boolean> | boolean,
  describe: () => Promise<string> | string,
  ms = 30_000,
) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`gave up waiting: ${await describe()}`)
}

describe('join on loopback: join service, key service and a joining node', function () {
  this.timeout(90_000)
  let node: LocalNode
  let ca: ClusterCa
  let js: JoinServiceUnderTest | undefined
  let running: RunningNode | undefined
  before(async () => (ca = await makeClusterCa()))
  beforeEach(async () => (node = await startLocalNode()))
  afterEach(async () => {
    await running?.daemon.stop(500)
    await js?.stop()
    await node.stop()
    const ports = [
      js?.port,
      js?.keyService.port,
      running && Number(running.address.split(':').pop()),
      Number(new URL(node.componentsUrl).port),
    ]
    // every one listened in this process (the swtpm is a child whose exit node.stop() awaited)
    for (const port of ports)
      if (port) expect(await listeningHere(port), `port ${port} still open here`).to.equal(false)
    running = undefined
    js = undefined
  })

  async function joinNode(
    self: NodeMember,
    opts: { measurements?: Measurements; keyServiceUp?: boolean } = {},
  ) {
    js = await startJoinService(node, ca, {
      measurements: opts.measurements ?? (await measurementsOf(node)),
      keyServiceUp: opts.keyServiceUp ?? true,
      members: [self],
    })
    running = await startNode(
      joiningNode(node, self, js.port),
      { KUBEADM_FAKE_API_DIR: js.api.dir },
      {
        join: {
          requestTicket: attestedJoinTicketRequester(createIssuer('qemu-vtpm', node.swtpm.open), 10_000),
          retry: FAST_RETRY,
        },
      },
    )
    return { js, running }
  }

  /** What every joined node has: PCR 15 with the cluster's ID, the disk on the cluster key, its kubelet certificate. */
  async function expectJoined(r: RunningNode, self: NodeMember, api: FakeKubeApiDir) {
    await r.daemon.done
    expect(r.daemon.outcome, await logsOf(r)).to.equal('joined')
    const clusterId = deriveClusterId(kms.measurementSecret(), MEASUREMENT_SALT)
    expect((await pcr15(node)).equals(clusterIdPcrValue(clusterId)), 'PCR 15').to.equal(true)
    const disk = new CryptsetupDisk(node.disk.image, createRunner(), path.join(node.dir, 'scratch'))
    const uuid = (await disk.uuid()).toLowerCase()
    expect(await disk.opensWith(kms.diskKey(uuid)), 'disk opens with the cluster key').to.equal(true)
    expect(await disk.opensWith(node.disk.initialKey), 'initial key is gone').to.equal(false)
    const paths = nodePaths(node.root)
    const state = JSON.parse(await readFile(paths.nodeStateFile, 'utf8')) as Record<string, string>
    expect(state).to.deep.equal({
      Role: self.role === 'control-plane' ? 'ControlPlane' : 'Worker',
      MeasurementSalt: MEASUREMENT_SALT.toString('base64'),
      DiskUUID: uuid,
    })
    const cert = new X509Certificate(await readFile(paths.kubeletClientCert))
    expect(cert.subject).to.equal(`CN=system:node:${self.name}\nO=system:nodes`)
    expect(cert.subjectAltName).to.equal(`DNS:${self.name}, IP Address:127.0.0.1`)
    expect(cert.verify(new X509Certificate(ca.caCertPem).publicKey), 'signed by the cluster CA').to.equal(
      true,
    )
    expect((await stat(paths.kubeletClientKey)).mode & 0o777).to.equal(0o600)
    const logs = await logsOf(r)
    expect(logs).to.include('Node joined the cluster')
    expect(logs, 'no disk key in the log').not.to.include(kms.diskKey(uuid).toString('hex'))
    for (const id of await api.tokenIds())
      expect(logs, 'no token in the log').not.to.match(new RegExp(`${id}\\.[a-z0-9]{16}`))
  }

  it('a worker joins: ticket, lock, disk key, kubelet certificate, kubeadm join; no CA keys', async () => {
    const self: NodeMember = { name: 'worker-1', role: 'worker', vpcIP: '127.0.0.1' }
    const { js, running } = await joinNode(self)
    await expectJoined(running, self, js.api)
    expect(await js.api.nodes()).to.deep.equal([{ name: 'worker-1', labels: {} }])
    expect(js.keysAsked.sort()).to.have.length(2)
    const pki = nodePaths(node.root).kubernetesPki
    expect(await readFile(path.join(pki, 'ca.crt'), 'utf8'), 'kubeadm wrote the discovered CA').to.equal(
      ca.caCertPem,
    )
    await expect(stat(path.join(pki, 'ca.key')), 'a worker gets no CA key').to.be.rejected
    // the init server went away with the join
    expect(await listeningHere(Number(running.address.split(':').pop()))).to.equal(false)
  })

  it('a control plane joins and gets the cluster CA files, 0600', async () => {
    const self: NodeMember = { name: 'cp-1', role: 'control-plane', vpcIP: '127.0.0.1' }
    const { js, running } = await joinNode(self)
    await expectJoined(running, self, js.api)
    expect(await js.api.nodes()).to.deep.equal([
      { name: 'cp-1', labels: { 'node-role.kubernetes.io/control-plane': '' } },
    ])
    const pki = nodePaths(node.root).kubernetesPki
    for (const file of ca.controlPlaneFiles) {
      expect(await readFile(path.join(pki, file.name)), file.name).to.deep.equal(file.data)
      expect((await stat(path.join(pki, file.name))).mode & 0o777, file.name).to.equal(0o600)
    }
  })

  it('measurements that do not match: refused with no secret sent, asked again; joins once the measurements are updated', async () => {
    const good = await measurementsOf(node)
    const wrong: Measurements = new Map(good)
    wrong.set(4, { expected: Buffer.alloc(32, 0x44), warnOnly: false })
    const self: NodeMember = { name: 'worker-1', role: 'worker', vpcIP: '127.0.0.1' }
    const { js, running } = await joinNode(self, { measurements: wrong })
    await eventually(
      async () => ((await logsOf(running)).match(/refused this node's attestation/g) ?? []).length >= 2,
      async () => `two refusals in the node log:\n${await logsOf(running)}`,
    )
    const logs = await logsOf(running)
    expect(logs).to.match(/measurement validation failed/)
    expect(js.keysAsked, 'the key service was never asked').to.deep.equal([])
    expect(await js.api.tokenIds(), 'no token was issued').to.deep.equal([])
    expect((await pcr15(node)).equals(Buffer.alloc(32)), 'PCR 15 untouched').to.equal(true)
    expect(running.daemon.outcome).to.equal('stopped')
    // the operator updates the measurements; the join service picks them up without a restart
    await writeFileAtomic(js.joinConfigFile, encodeJoinConfig(good))
    await expectJoined(running, self, js.api)
  })

  it('the key service is down: the node keeps asking and joins once it is back', async () => {
    const self: NodeMember = { name: 'worker-1', role: 'worker', vpcIP: '127.0.0.1' }
    const { js, running } = await joinNode(self, { keyServiceUp: false })
    await eventually(
      () => js.keysAsked.length >= 4,
      () => `the join service asked the key service ${js.keysAsked.length} times`,
    )
    expect(await logsOf(running)).to.match(/No usable join ticket from this join service.*key service/)
    expect(running.daemon.outcome).to.equal('stopped')
    expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
    await js.keyService.start()
    await expectJoined(running, self, js.api)
  })
})

/** A join request as a node builds it: a fresh key and CSR for `name` at `ip`. */
async function joinRequest(name: string, ip: string, diskUuid: string = randomUUID()) {
  const { privateKey } = await generateEcdsaP256KeyPair()
  const certificateRequest = createCsr({
    key: privateKey,
    subject: [
      ['CN', `system:node:${name}`],
      ['O', 'system:nodes'],
    ],
    ipSans: [ip],
    dnsSans: [name],
  })
  return {
    diskUuid,
    certificateRequest,
    isControlPlane: false,
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
  }
}

/** Each with a loopback address of its own, which its requests leave from (as mini's nodes). */
const LOAD_WORKERS: NodeMember[] = Array.from({ length: 50 }, (_, i) => ({
  name: `worker-${i}`,
  role: 'worker',
  vpcIP: `127.0.2.${i + 1}`,
}))

describe('join service refusals and load, with real attestation (swtpm per node)', function () {
  this.timeout(120_000)
  let node: LocalNode
  let ca: ClusterCa
  let js: JoinServiceUnderTest
  const swtpms: SwtpmHandle[] = []
  before(async () => {
    ca = await makeClusterCa()
    node = await startLocalNode()
    js = await startJoinService(node, ca, {
      measurements: await measurementsOf(node),
      keyServiceUp: true,
      members: [{ name: 'worker-8', role: 'worker', vpcIP: '127.0.0.1' }, ...LOAD_WORKERS],
    })
  })
  after(async () => {
    await js?.stop()
    await Promise.all(swtpms.map((t) => t.stop()))
    await node?.stop()
  })
  const endpoint = () => `127.0.0.1:${js.port}`
  const ask = (open: OpenTpm, request: Awaited<ReturnType<typeof joinRequest>>, from?: string) =>
    attestedJoinTicketRequester(createIssuer('qemu-vtpm', open), 10_000, from)(
      endpoint(),
      request,
      new AbortController().signal,
    )
  const audits = () =>
    js.lines
      .map((l) => JSON.parse(l) as { msg: string; verdict?: string; reason?: string; node?: string })
      .filter((l) => l.msg === 'Join request')

  it('a node whose PCR 15 is not zero (bootstrapped before) gets nothing: no key asked, no token', async () => {
    const tpm = await startSwtpm()
    swtpms.push(tpm)
    await extendPcr(tpm.open, 15, Buffer.alloc(32, 0x15))
    const asked = js.keysAsked.length
    const err = (await ask(tpm.open, await joinRequest('worker-9', '127.0.0.1')).catch(
      (e: unknown) => e,
    )) as Error
    expect(err).to.be.instanceOf(Error)
    expect(js.keysAsked).to.have.length(asked)
    expect(await js.api.tokenIds()).to.deep.equal([])
    expect(JSON.stringify(audits().at(-1))).to.match(/refused/)
    expect(audits().at(-1)?.reason).to.match(/PCR 15|measurement/)
  })

  it("a CSR for another node's address: refused, naming the IP SAN, before any key is asked", async () => {
    const asked = js.keysAsked.length
    const err = (await ask(node.swtpm.open, await joinRequest('worker-8', '10.0.0.9')).catch(
      (e: unknown) => e,
    )) as { details?: string }
    expect(err.details).to.match(/IP SAN/)
    expect(js.keysAsked).to.have.length(asked)
    expect(audits().at(-1)).to.include({ verdict: 'refused', node: 'worker-8' })
  })

  it('50 workers at once, each with its own TPM: all get tickets, with distinct tokens and disk keys', async () => {
    const tpms = await Promise.all(Array.from({ length: 50 }, () => startSwtpm()))
    swtpms.push(...tpms)
    const uuids = tpms.map(() => randomUUID())
    const tickets = await Promise.all(
      tpms.map(async (tpm, i) => {
        const { name, vpcIP } = LOAD_WORKERS[i]!
        return ask(tpm.open, await joinRequest(name, vpcIP, uuids[i]), vpcIP)
      }),
    )
    expect(new Set(tickets.map((t) => t.token)).size).to.equal(50)
    expect(new Set(tickets.map((t) => t.stateDiskKey.toString('hex'))).size).to.equal(50)
    tickets.forEach((t, i) => expect(t.stateDiskKey).to.deep.equal(kms.diskKey(uuids[i] ?? '')))
    expect((await js.api.tokenIds()).length).to.be.at.least(50)
    expect(audits().filter((l) => l.verdict === 'ok')).to.have.length.at.least(50)
  })
})
