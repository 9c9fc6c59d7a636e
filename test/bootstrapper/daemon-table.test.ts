/**
 * The Bootstrapper with every part stubbed (lock, disk, installer, kubeadm; insecure gRPC on
 * loopback): its Init handler and stop() without swtpm or cryptsetup. The real parts run in
 * test/init (flow, node-components) and test/bootstrapper/init/init-node.test.ts.
 */
import { credentials, ServerCredentials, status } from '@grpc/grpc-js'
import { APIClient, InitRequest } from '../../src/gen/init.js'
import { Bootstrapper, LogCollector, NodeLock, type JoinClient } from '../../src/lib/bootstrapper/index.js'
import { clusterKmsUri, hashInitSecret } from '../../src/lib/kms/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { callInit, type InitReply } from '../support/init-client.js'
import { silentLogger } from '../../src/lib/system/logger.js'
import { settledWithin } from '../../src/lib/system/index.js'
import { type BootstrapperParts, type BootstrapperSettings } from '../../src/lib/bootstrapper/daemon.js'

const secret = Buffer.from('init-secret-0123456789abcdef0123')
const initSecretHash = await hashInitSecret(secret, 4)
const request = InitRequest.fromPartial({
  kmsUri: clusterKmsUri({ key: Buffer.alloc(32, 1), salt: Buffer.alloc(32, 2) }),
  storageUri: 'storage://no-store',
  measurementSalt: Buffer.alloc(32, 3),
  kubernetesVersion: 'v1.31.13',
  initSecret: secret,
})

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

/** A promise the test resolves by hand. */
function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

interface StubOptions {
  /** A join took the lock before any Init came. */
  lockTaken?: boolean
  changeKeyFails?: boolean
  /** The download never finishes by itself; it fails once the daemon's signal aborts. */
  downloadHangs?: boolean
  /** kubeadm waits until the test releases it. */
  kubeadmHeld?: boolean
  /** The lock's PCR 15 extend waits until the test releases it (a TPM slow to answer). */
  extendHeld?: boolean
  joinClient?: JoinClient
}

/** A Bootstrapper on stub parts; `events` records what reached the node's parts, in order. */
async function startStubNode(dir: string, opts: StubOptions) {
  const events: string[] = []
  const kubeadmReached = deferred()
  const kubeadmRelease = deferred()
  if (!opts.kubeadmHeld) kubeadmRelease.resolve()
  const extendRelease = deferred()
  if (!opts.extendHeld) extendRelease.resolve()
  const lock = new NodeLock({
    extendPcr: async () => {
      await extendRelease.promise
      events.push('lock')
    },
  })
  if (opts.lockTaken) {
    await lock.tryLockOnce(Buffer.from('a join'))
    events.length = 0
  }
  const parts: BootstrapperParts = {
    paths: nodePaths(dir),
    readClusterIdPcr: () => Promise.resolve(Buffer.alloc(32)),
    lock,
    disk: {
      uuid: () => Promise.resolve('0A1B2C3D-0000-0000-0000-000000000000'),
      changeKey: () => {
        events.push('changeKey')
        return opts.changeKeyFails ? Promise.reject(new Error('cryptsetup exited 2')) : Promise.resolve()
      },
      writeMark: (mark) => Promise.resolve(void events.push(`mark ${mark}`)),
    },
    installer: (_components, signal) => {
      events.push('stage')
      const staged = {
        install: () => Promise.resolve(void events.push('install')),
        discard: () => Promise.resolve(),
      }
      if (!opts.downloadHangs) return Promise.resolve(staged)
      return new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => reject(new Error('GET aborted')), { once: true }),
      )
    },
    // recorded when it finishes: a kubeadm the state disk's failure stopped never does
    kubeadm: async (_input, signal) => {
      kubeadmReached.resolve()
      await kubeadmRelease.promise
      await new Promise((resolve) => setImmediate(resolve)) // a failing disk has stopped it by now
      if (signal.aborted) throw new Error('kubeadm: stopped')
      events.push('kubeadm')
      return Buffer.from('admin kubeconfig')
    },
    logs: new LogCollector(),
    log: silentLogger,
    credentials: ServerCredentials.createInsecure(),
    joinClient: opts.joinClient,
  }
  const daemon = new Bootstrapper(settings, parts)
  const address = await daemon.start()
  const client = new APIClient(address, credentials.createInsecure(), { 'grpc.enable_retries': 0 })
  return {
    daemon,
    address,
    client,
    events,
    lock,
    kubeadmReached: kubeadmReached.promise,
    kubeadmRelease,
    extendRelease,
  }
}

type StubNode = Awaited<ReturnType<typeof startStubNode>>

/** A join that takes the lock when the test says, then joins or fails when the test says. */
/** A join client that asks no join service: it watches the lock and stops once it is taken, as a round of the real one does. */
class LockWatchingJoinClient implements JoinClient {
  readonly sawLock = deferred()
  private stopped = false
  async start(lock: NodeLock): Promise<void> {
    while (!lock.isLocked && !this.stopped) await new Promise((r) => setTimeout(r, 2))
    if (lock.isLocked) this.sawLock.resolve()
  }
  stop(): Promise<void> {
    this.stopped = true
    return Promise.resolve()
  }
}

class FakeJoinClient implements JoinClient {
  readonly takeLock = deferred()
  readonly finish = deferred<'joined' | 'failed'>()
  readonly locked = deferred()
  stopCalls = 0
  async start(lock: NodeLock, onLocked: () => void): Promise<void> {
    const stopped = new Promise<'stopped'>((resolve) => (this.onStop = () => resolve('stopped')))
    if ((await Promise.race([this.takeLock.promise, stopped])) === 'stopped') return
    if (!(await lock.tryLockOnce(Buffer.from('cluster ID from a ticket')))) return
    onLocked()
    this.locked.resolve()
    if ((await this.finish.promise) === 'failed') throw new Error('kubeadm join exited 1')
  }
  private onStop = () => {}
  stop(): Promise<void> {
    this.stopCalls++
    this.onStop()
    return Promise.resolve()
  }
}

describe('Bootstrapper on stub parts', function () {
  this.timeout(10_000)
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

  describe('the Init handler', () => {
    const cases: Record<
      string,
      {
        stub: StubOptions
        secret?: Buffer
        want: { code: status; failure?: RegExp; kubeconfig?: string }
        wantEvents: string[]
        wantOutcome: Bootstrapper['outcome']
        /** The daemon stops serving by itself (an Init took the lock). */
        wantDone: boolean
      }
    > = {
      'init ok: lock, disk key and components, kubeadm; answers the kubeconfig and stops serving': {
        stub: {},
        want: { code: status.OK, kubeconfig: 'admin kubeconfig' },
        wantEvents: ['stage', 'lock', 'changeKey', 'install', 'mark initialized', 'kubeadm'],
        wantOutcome: 'initialized',
        wantDone: true,
      },
      'lock already taken (a join won): FAILED_PRECONDITION before the secret is checked or anything staged':
        {
          stub: { lockTaken: true },
          want: { code: status.FAILED_PRECONDITION, failure: /node is already being activated/ },
          wantEvents: [],
          wantOutcome: 'joined',
          wantDone: false,
        },
      'disk failure after the lock: INTERNAL, kubeadm never finishes, the node is spent': {
        stub: { changeKeyFails: true },
        want: { code: status.INTERNAL, failure: /setting the state disk key: cryptsetup exited 2/ },
        wantEvents: ['stage', 'lock', 'changeKey', 'install'],
        wantOutcome: 'failed',
        wantDone: true,
      },
      'wrong init secret: PERMISSION_DENIED before any part is touched': {
        stub: {},
        secret: Buffer.from('not the init secret'),
        want: { code: status.PERMISSION_DENIED, failure: /invalid init secret/ },
        wantEvents: [],
        wantOutcome: 'stopped',
        wantDone: false,
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(name, async () => {
        node = await startStubNode(dir, tc.stub)
        const reply = await callInit(node.client, { ...request, initSecret: tc.secret ?? secret })
        expect(reply.code, reply.failure).to.equal(tc.want.code)
        if (tc.want.failure) expect(reply.failure).to.match(tc.want.failure)
        expect(reply.kubeconfig?.toString()).to.equal(tc.want.kubeconfig)
        expect(node.events).to.deep.equal(tc.wantEvents)
        expect(node.daemon.outcome).to.equal(tc.wantOutcome)
        expect(await settledWithin(node.daemon.done, tc.wantDone ? 2_000 : 200)).to.equal(tc.wantDone)
      })
    }
  })

  describe('stop()', () => {
    const cases: Record<
      string,
      {
        stub: StubOptions
        /** Where the Init is when stop() comes; none: no Init at all. */
        during?: 'download' | 'kubeadm'
        graceMs: number
        /** kubeadm finishes this long after stop() was called. */
        kubeadmAfterStopMs?: number
        want?: { code: (code: status) => boolean; failure?: RegExp }
        wantLocked: boolean
        wantOutcome: Bootstrapper['outcome']
      }
    > = {
      'stop() while idle, called twice: one stop, the port closes, outcome stopped': {
        stub: {},
        graceMs: 1_000,
        wantLocked: false,
        wantOutcome: 'stopped',
      },
      'stop() during a download: the download is aborted, Init fails before the lock': {
        stub: { downloadHangs: true },
        during: 'download',
        graceMs: 5_000,
        want: { code: (c) => c === status.FAILED_PRECONDITION, failure: /GET aborted/ },
        wantLocked: false,
        wantOutcome: 'stopped',
      },
      'stop() during kubeadm: the Init past the lock answers within the grace, then the server stops': {
        stub: { kubeadmHeld: true },
        during: 'kubeadm',
        graceMs: 5_000,
        kubeadmAfterStopMs: 100,
        want: { code: (c) => c === status.OK },
        wantLocked: true,
        wantOutcome: 'initialized',
      },
      'stop() during kubeadm past the grace: the server is force-stopped, the node is spent': {
        stub: { kubeadmHeld: true },
        during: 'kubeadm',
        graceMs: 100,
        want: { code: (c) => c !== status.OK },
        wantLocked: true,
        wantOutcome: 'failed',
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(name, async () => {
        const n = (node = await startStubNode(dir, tc.stub))
        let reply: Promise<InitReply> | undefined
        if (tc.during) {
          reply = callInit(n.client, request)
          if (tc.during === 'kubeadm') await n.kubeadmReached
          else while (!n.events.includes('stage')) await new Promise((r) => setTimeout(r, 10))
        }
        const first = n.daemon.stop(tc.graceMs)
        expect(n.daemon.stop(tc.graceMs), 'a second stop() is the same stop').to.equal(first)
        if (tc.kubeadmAfterStopMs !== undefined)
          setTimeout(() => n.kubeadmRelease.resolve(), tc.kubeadmAfterStopMs)
        await first
        expect(await settledWithin(n.daemon.done, 100)).to.equal(true)
        if (tc.want) {
          const answer = await reply
          expect(tc.want.code(answer?.code ?? -1), `code ${answer?.code}: ${answer?.details}`).to.equal(true)
          if (tc.want.failure) expect(answer?.failure).to.match(tc.want.failure)
        }
        expect(n.lock.isLocked).to.equal(tc.wantLocked)
        expect(n.daemon.outcome).to.equal(tc.wantOutcome)
        const after = await callInit(n.client, request)
        expect(after.code, 'nothing serves Init after stop()').to.equal(status.UNAVAILABLE)
      })
    }
  })

  describe('a join beside Init', () => {
    const cases: Record<string, { join: 'joined' | 'failed'; wantOutcome: Bootstrapper['outcome'] }> = {
      'the join takes the lock: Init stops serving at once, the daemon is done once joined': {
        join: 'joined',
        wantOutcome: 'joined',
      },
      'the join fails after the lock: the daemon is done, the node spent': {
        join: 'failed',
        wantOutcome: 'join-failed',
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const join = new FakeJoinClient()
        const n = (node = await startStubNode(dir, { joinClient: join }))
        join.takeLock.resolve()
        await join.locked.promise
        // the init server goes away while the join still runs
        let refused: InitReply | undefined
        for (let i = 0; i < 50 && refused?.code !== status.UNAVAILABLE; i++) {
          refused = await callInit(n.client, request)
          if (refused.code !== status.UNAVAILABLE) await new Promise((r) => setTimeout(r, 20))
        }
        expect(refused?.code, refused?.details).to.equal(status.UNAVAILABLE)
        expect(await settledWithin(n.daemon.done, 50), 'done before the join finished').to.equal(false)
        join.finish.resolve(tc.join)
        expect(await settledWithin(n.daemon.done, 2_000)).to.equal(true)
        expect(n.daemon.outcome).to.equal(tc.wantOutcome)
        expect(n.events).to.deep.equal(['lock'])
      })

    it("a join client that finds the lock taken while Init's PCR 15 extend still runs: Init goes on and answers", async () => {
      const join = new LockWatchingJoinClient()
      const n = (node = await startStubNode(dir, { joinClient: join, extendHeld: true }))
      const reply = callInit(n.client, request)
      await join.sawLock.promise // the lock's flag is up, the TPM has not answered, onLocked not called
      await new Promise((r) => setTimeout(r, 50))
      // still serving: a second caller is answered (the lock is taken), not refused a connection
      const other = new APIClient(n.address, credentials.createInsecure(), {
        'grpc.enable_retries': 0,
        'grpc.use_local_subchannel_pool': 1, // a connection of its own
      })
      const second = await callInit(other, request).finally(() => other.close())
      expect(second.code, second.details).to.equal(status.FAILED_PRECONDITION)
      n.extendRelease.resolve()
      const answer = await reply
      expect(answer.code, answer.details).to.equal(status.OK)
      expect(answer.kubeconfig?.toString()).to.equal('admin kubeconfig')
      await n.daemon.done
      expect(n.daemon.outcome).to.equal('initialized')
    })

    it('Init takes the lock first: the join client is stopped and never locks', async () => {
      const join = new FakeJoinClient()
      const n = (node = await startStubNode(dir, { joinClient: join }))
      const answer = await callInit(n.client, request)
      expect(answer.code).to.equal(status.OK)
      expect(join.stopCalls).to.be.greaterThan(0)
      join.takeLock.resolve()
      await n.daemon.done
      expect(n.daemon.outcome).to.equal('initialized')
    })
  })
})
