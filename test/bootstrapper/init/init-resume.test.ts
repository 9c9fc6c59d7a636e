/**
 * The node's resume rules, on stub parts (lock, disk, installer, kubeadm; insecure gRPC on loopback):
 * an Init whose caller went away after the node lock keeps its answer, and hands it only to a
 * resume that proves the init secret and the master secret, bound to a key the node attested. The
 * same over real aTLS with swtpm: test/init/resume.test.ts.
 */
import { stat } from 'node:fs/promises'
import { credentials, ServerCredentials, status } from '@grpc/grpc-js'
import { APIClient, InitRequest } from '../../../src/gen/init.js'
import { Bootstrapper, LogCollector, NodeLock } from '../../../src/lib/bootstrapper/index.js'
import type { BootstrapperParts, BootstrapperSettings } from '../../../src/lib/bootstrapper/daemon.js'
import {
  clusterKmsUri,
  deriveResumeKey,
  hashInitSecret,
  resumeProof,
  type MasterSecret,
} from '../../../src/lib/kms/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { createLogger, settledWithin } from '../../../src/lib/system/index.js'
import { expect } from '../../support/chai.js'
import { eventually } from '../../support/eventually.js'
import { callInit, type InitReply } from '../../support/init-client.js'
import { callInit as cliCallInit } from '../../../src/lib/init/rpc.js'
import { makeTempDir } from '../../support/temp.js'

const secret = Buffer.from('init-secret-0123456789abcdef0123')
const initSecretHash = await hashInitSecret(secret, 4)
const master: MasterSecret = { key: Buffer.alloc(32, 1), salt: Buffer.alloc(32, 2) }
const otherMaster: MasterSecret = { key: Buffer.alloc(32, 5), salt: Buffer.alloc(32, 2) }
const fullRequest = InitRequest.fromPartial({
  kmsUri: clusterKmsUri(master),
  storageUri: 'storage://no-store',
  measurementSalt: Buffer.alloc(32, 3),
  kubernetesVersion: 'v1.31.13',
  initSecret: secret,
})
const KUBECONFIG = 'admin kubeconfig'

const settings: BootstrapperSettings = {
  initServer: { listen: '127.0.0.1:0' },
  initSecretHash,
  stateDisk: { device: '/dev/stub-state-disk' },
  metadata: {
    provider: 'static',
    self: { name: 'cp_0', role: 'control-plane', vpcIP: '127.0.0.1' },
    peers: [],
  },
}

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * Stands in for the keys the init server's credentials attested (insecure gRPC has no handshake):
 * the test says which key "its handshake" had; each is good for one resume, as the real one.
 */
class StubAttestedKeys {
  private readonly keys = new Set<string>()
  attest(): Buffer {
    const key = Buffer.alloc(32, this.keys.size + 40)
    this.keys.add(key.toString('hex'))
    return key
  }
  record(key: Buffer): void {
    this.keys.add(key.toString('hex'))
  }
  take(key: Buffer): boolean {
    return this.keys.delete(key.toString('hex'))
  }
}

interface StubOptions {
  /** kubeadm fails (after the lock) once released. */
  kubeadmFails?: boolean
  /** The backoff after a wrong secret; long enough here that the next try surely meets it. */
  backoffMs?: number
}

async function startStubNode(dir: string, opts: StubOptions = {}) {
  const events: string[] = []
  const kubeadmReached = deferred()
  const kubeadmRelease = deferred()
  const attested = new StubAttestedKeys()
  const lines: string[] = []
  const parts: BootstrapperParts & Record<string, unknown> = {
    paths: nodePaths(dir),
    readClusterIdPcr: () => Promise.resolve(Buffer.alloc(32)),
    lock: new NodeLock({ extendPcr: () => Promise.resolve(void events.push('lock')) }),
    disk: {
      uuid: () => Promise.resolve('0A1B2C3D-0000-0000-0000-000000000000'),
      changeKey: () => Promise.resolve(void events.push('changeKey')),
      writeMark: (mark) => Promise.resolve(void events.push(`mark ${mark}`)),
    },
    installer: () => {
      events.push('stage')
      return Promise.resolve({ install: () => Promise.resolve(), discard: () => Promise.resolve() })
    },
    kubeadm: async () => {
      events.push('kubeadm')
      kubeadmReached.resolve()
      await kubeadmRelease.promise
      if (opts.kubeadmFails) throw new Error('kubeadm init exited 1')
      return Buffer.from(KUBECONFIG)
    },
    logs: new LogCollector(),
    log: createLogger({ format: 'json', write: (line) => lines.push(line) }),
    credentials: ServerCredentials.createInsecure(),
    attestedKeys: attested,
    resumeLimits: { backoffInitialMs: opts.backoffMs ?? 0, backoffMaxMs: opts.backoffMs ?? 0 },
  }
  const daemon = new Bootstrapper(settings, parts)
  const address = await daemon.start()
  const client = new APIClient(address, credentials.createInsecure(), { 'grpc.enable_retries': 0 })
  return {
    daemon,
    address,
    client,
    events,
    attested,
    lines,
    kubeadmReached: kubeadmReached.promise,
    kubeadmRelease,
    dir,
  }
}

type StubNode = Awaited<ReturnType<typeof startStubNode>>

/** Resolves once the node logged `msg` (how a test knows what the node has seen, e.g. a caller gone). */
const logged = (node: StubNode, msg: string) =>
  eventually(
    `the node to log "${msg}"`,
    () => Promise.resolve(node.lines.some((l) => l.includes(`"msg":"${msg}`)) || undefined),
    5_000,
  )

/** What `constellation init` run again sends: the init secret and a proof bound to its handshake's key. */
function resumeRequest(
  node: StubNode,
  opts: { master?: MasterSecret; initSecret?: Buffer; key?: Buffer } = {},
) {
  const key = opts.key ?? node.attested.attest()
  return InitRequest.fromPartial({
    initSecret: opts.initSecret ?? secret,
    resumeProof: resumeProof(deriveResumeKey(opts.master ?? master), key),
  })
}

const keptFile = (node: StubNode) => nodePaths(node.dir).initResultFile
const fileMode = (file: string) =>
  stat(file).then(
    (s) => s.mode & 0o777,
    () => undefined,
  )

/** A full Init whose caller goes away while kubeadm runs (after the node lock). */
async function cutInit(node: StubNode): Promise<InitReply> {
  const gone = new AbortController()
  const reply = callInit(node.client, fullRequest, gone.signal)
  await node.kubeadmReached
  gone.abort()
  const answer = await reply
  await logged(node, 'The Init caller went away')
  return answer
}

/** cutInit, then kubeadm finishes. */
async function interruptedInit(node: StubNode): Promise<InitReply> {
  const answer = await cutInit(node)
  node.kubeadmRelease.resolve()
  return answer
}

describe('an initialized node hands its answer to a resume, and only to one that proves both secrets', function () {
  this.timeout(15_000)
  let dir: string
  let cleanup: () => Promise<void>
  let node: StubNode | undefined
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(async () => {
    node?.kubeadmRelease.resolve()
    node?.client.close()
    await node?.daemon.stop(100)
    node = undefined
    await cleanup()
  })

  it('the caller goes away after the lock: the node keeps the answer (0600, on the state disk) and keeps serving', async () => {
    node = await startStubNode(dir)
    const cut = await interruptedInit(node)
    expect(cut.code).to.equal(status.CANCELLED)
    expect(await eventually('the kept answer', () => fileMode(keptFile(node!)))).to.equal(0o600)
    expect(await settledWithin(node.daemon.done, 300), 'still serving for a resume').to.equal(false)
    expect(node.daemon.outcome).to.equal('initialized')
  })

  it('a resume with both secrets gets the kubeconfig; the kept copy is removed and the daemon is done', async () => {
    const n = (node = await startStubNode(dir))
    await interruptedInit(n)
    await eventually('the kept answer', () => fileMode(keptFile(n)))
    const resumed = await callInit(n.client, resumeRequest(n))
    expect(resumed.code, resumed.details).to.equal(status.OK)
    expect(resumed.kubeconfig?.toString()).to.equal(KUBECONFIG)
    expect(await fileMode(keptFile(n)), 'nothing left on the node').to.equal(undefined)
    await n.daemon.done // it stops by itself (mocha's timeout bounds the wait)
    expect(n.daemon.outcome).to.equal('initialized')
    expect(n.events.filter((e) => e === 'lock')).to.have.length(1)
  })

  it('a resume while kubeadm still runs waits for the answer', async () => {
    const n = (node = await startStubNode(dir))
    await cutInit(n)
    const resumed = callInit(n.client, resumeRequest(n))
    expect(await settledWithin(resumed, 200), 'waits while kubeadm runs').to.equal(false)
    n.kubeadmRelease.resolve()
    const answer = await resumed
    expect(answer.code, answer.details).to.equal(status.OK)
    expect(answer.kubeconfig?.toString()).to.equal(KUBECONFIG)
  })

  it('a waiting resume that goes away too: the answer is kept once, for the next resume', async () => {
    const n = (node = await startStubNode(dir))
    await cutInit(n)
    const gone = new AbortController()
    const waiting = callInit(n.client, resumeRequest(n), gone.signal)
    await logged(n, 'Resume proven')
    gone.abort()
    await waiting
    await logged(n, 'The resume caller went away')
    n.kubeadmRelease.resolve()
    await eventually('the kept answer', () => fileMode(keptFile(n)), 5_000)
    const resumed = await callInit(n.client, resumeRequest(n))
    expect(resumed.code, resumed.details).to.equal(status.OK)
    expect(resumed.kubeconfig?.toString()).to.equal(KUBECONFIG)
    expect(n.lines.filter((l) => l.includes('"level":"error"'))).to.deep.equal([])
  })

  const refusals: Record<string, { request: (n: StubNode) => InitRequest; code: status; failure: RegExp }> = {
    'a wrong init secret': {
      request: (n) => resumeRequest(n, { initSecret: Buffer.from('not the init secret') }),
      code: status.PERMISSION_DENIED,
      failure: /invalid init secret/,
    },
    'a wrong master secret': {
      request: (n) => resumeRequest(n, { master: otherMaster }),
      code: status.PERMISSION_DENIED,
      failure: /does not match the master secret this node was initialized with/,
    },
    'a proof bound to a key this node never attested (made for a server that posed as it)': {
      request: (n) => resumeRequest(n, { key: Buffer.alloc(32, 0xee) }),
      code: status.PERMISSION_DENIED,
      failure: /this node did not attest/,
    },
    'a proof of the wrong length': {
      request: () => InitRequest.fromPartial({ initSecret: secret, resumeProof: Buffer.alloc(10) }),
      code: status.PERMISSION_DENIED,
      failure: /resume_proof is 10 bytes, want 64/,
    },
    'a full Init request (even with a wrong init secret): refused before any secret is checked': {
      request: () => ({ ...fullRequest, initSecret: Buffer.from('not the init secret') }),
      code: status.FAILED_PRECONDITION,
      failure: /node is already being activated/,
    },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`${name}: refused, nothing handed out, the kept answer stays as it was`, async () => {
      const n = (node = await startStubNode(dir))
      await interruptedInit(n)
      const kept = await eventually('the kept answer', () => fileMode(keptFile(n)))
      const keptBefore = await stat(keptFile(n))
      const refused = await callInit(n.client, tc.request(n))
      expect(refused.code, refused.details).to.equal(tc.code)
      expect(refused.failure).to.match(tc.failure)
      expect(refused.kubeconfig).to.equal(undefined)
      expect(refused.logChunks, 'no log for an unproven caller').to.deep.equal([])
      expect(await fileMode(keptFile(n))).to.equal(kept)
      expect((await stat(keptFile(n))).mtimeMs).to.equal(keptBefore.mtimeMs)
      // and the genuine resume still works
      const resumed = await callInit(n.client, resumeRequest(n))
      expect(resumed.code, resumed.details).to.equal(status.OK)
      expect(resumed.kubeconfig?.toString()).to.equal(KUBECONFIG)
    })

  it('a wrong secret makes its address wait before its next try (RESOURCE_EXHAUSTED, with when to retry)', async () => {
    const n = (node = await startStubNode(dir, { backoffMs: 600_000 }))
    await interruptedInit(n)
    await eventually('the kept answer', () => fileMode(keptFile(n)))
    const wrong = await callInit(n.client, resumeRequest(n, { master: otherMaster }))
    expect(wrong.code).to.equal(status.PERMISSION_DENIED)
    const next = await callInit(n.client, resumeRequest(n))
    expect(next.code, next.details).to.equal(status.RESOURCE_EXHAUSTED)
    expect(next.failure).to.match(/too many wrong secrets from this address; retry in 600 s/)
    expect(next.kubeconfig).to.equal(undefined)
  })

  it('a node never initialized: a resume finds nothing (before any secret is checked), and Init still works', async () => {
    const n = (node = await startStubNode(dir))
    const resumed = await callInit(n.client, resumeRequest(n))
    expect(resumed.code, resumed.details).to.equal(status.FAILED_PRECONDITION)
    expect(resumed.failure).to.match(/this node was not initialized, so there is nothing to resume/)
    expect(n.events).to.deep.equal([])
    n.kubeadmRelease.resolve()
    const init = await callInit(n.client, fullRequest)
    expect(init.code, init.details).to.equal(status.OK)
  })

  it('a second resume, after one received the answer, gets nothing', async () => {
    const n = (node = await startStubNode(dir))
    await interruptedInit(n)
    await eventually('the kept answer', () => fileMode(keptFile(n)))
    expect((await callInit(n.client, resumeRequest(n))).code).to.equal(status.OK)
    const second = await callInit(n.client, resumeRequest(n))
    expect([status.FAILED_PRECONDITION, status.UNAVAILABLE], second.details).to.include(second.code)
    expect(second.kubeconfig).to.equal(undefined)
  })

  it('an answer the original caller received is not kept, and no resume is served', async () => {
    const n = (node = await startStubNode(dir))
    n.kubeadmRelease.resolve()
    const init = await callInit(n.client, fullRequest)
    expect(init.code).to.equal(status.OK)
    expect(await fileMode(keptFile(n))).to.equal(undefined)
    await n.daemon.done // it stops by itself (mocha's timeout bounds the wait)
  })

  it("the CLI's call, which hangs up as soon as it has the answer, is not taken for a caller gone", async () => {
    const n = (node = await startStubNode(dir))
    n.kubeadmRelease.resolve()
    const outcome = await cliCallInit(fullRequest, {
      address: n.address,
      credentials: credentials.createInsecure(),
      signal: AbortSignal.timeout(10_000),
      deadline: new Date(Date.now() + 10_000),
      log: createLogger({ format: 'json', write: () => {} }),
    })
    expect(outcome.ok).to.equal(true)
    await n.daemon.done
    expect(await fileMode(keptFile(n))).to.equal(undefined)
    expect(n.lines.filter((l) => l.includes('went away'))).to.deep.equal([])
  })

  it('the Init failed after the lock: a waiting resume learns it, and gets no kubeconfig', async () => {
    const n = (node = await startStubNode(dir, { kubeadmFails: true }))
    await cutInit(n)
    const resumed = callInit(n.client, resumeRequest(n))
    await logged(n, 'Resume proven')
    n.kubeadmRelease.resolve()
    const answer = await resumed
    expect(answer.code, answer.details).to.equal(status.INTERNAL)
    expect(answer.failure).to.match(/failed after its lock.*kubeadm init exited 1/)
    expect(answer.kubeconfig).to.equal(undefined)
    expect(await fileMode(keptFile(n))).to.equal(undefined)
    expect(n.daemon.outcome).to.equal('failed')
  })
})
