import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { leaseControlPlaneTurns } from '../../src/lib/joinservice/index.js'
import { CONTROL_PLANE_LEASE } from '../../src/lib/joinservice/control-plane-turns.js'
import { openKubeApi, type KubeApi } from '../../src/lib/kube/index.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { makeTempDir } from '../support/temp.js'

/** Control-plane turns through the Lease, two join services on one API (FakeApiServer, a test double). */
describe('control-plane join turns (a Lease in the Kubernetes API)', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let server: FakeApiServer
  let api: KubeApi
  let now: number
  let queued: string[]
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    server = await new FakeApiServer({ dir: path.join(dir, 'api') }).start()
    await writeFile(path.join(dir, 'admin.conf'), server.kubeconfig())
    api = await openKubeApi(path.join(dir, 'admin.conf'))
    now = Date.parse('2026-06-01T00:00:00Z')
    queued = []
  })
  afterEach(async () => {
    await server.stop()
    await cleanup()
  })
  /** One join service's view; each has its own client, as on two control planes. */
  const service = (turnSeconds?: number) =>
    leaseControlPlaneTurns({
      api,
      clock: () => new Date(now),
      logger: createLogger({
        format: 'json',
        write: (l) => queued.push((JSON.parse(l) as { joining?: string }).joining ?? ''),
      }),
      turnSeconds,
      pollIntervalMs: 20,
    })
  const registerNode = async (name: string) => {
    await mkdir(path.join(dir, 'api/nodes'), { recursive: true })
    await writeFile(path.join(dir, 'api/nodes', `${name}.json`), JSON.stringify({ metadata: { name } }))
  }
  const settled = async (p: Promise<unknown>, ms = 150) =>
    Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))])

  it('a second control plane waits, on another join service, until the first one registered', async () => {
    const signal = new AbortController().signal
    await service().take('cp-1', signal)
    const second = service().take('cp-2', signal)
    expect(await settled(second)).to.equal(false)
    expect(queued).to.include('cp-1') // logged as queued behind cp-1
    await registerNode('cp-1')
    expect(await settled(second, 2_000)).to.equal(true)
    expect((await api.getLease(CONTROL_PLANE_LEASE.namespace, CONTROL_PLANE_LEASE.name))?.holder).to.equal(
      'cp-2',
    )
  })

  it('a turn given back (the ticket failed, the node hung up) lets the next one in at once', async () => {
    const signal = new AbortController().signal
    const first = await service().take('cp-1', signal)
    const second = service().take('cp-2', signal)
    expect(await settled(second)).to.equal(false)
    await first.release()
    expect(await settled(second, 2_000)).to.equal(true)
    await first.release() // cp-2 holds it now: nothing changes
    expect((await api.getLease(CONTROL_PLANE_LEASE.namespace, CONTROL_PLANE_LEASE.name))?.holder).to.equal(
      'cp-2',
    )
  })

  it('a turn taken and not used (no Node) ends after about a minute by default', async () => {
    const signal = new AbortController().signal
    await service().take('cp-1', signal)
    const second = service().take('cp-2', signal)
    now += 30_000
    expect(await settled(second)).to.equal(false)
    now += 31_000
    expect(await settled(second, 2_000)).to.equal(true)
  })

  it('a turn nobody used ends when the Lease expires, as long as the Lease says', async () => {
    const signal = new AbortController().signal
    await service(300).take('cp-1', signal)
    const second = service(300).take('cp-2', signal)
    now += 299_000
    expect(await settled(second)).to.equal(false)
    now += 2_000
    expect(await settled(second, 2_000)).to.equal(true)
  })

  it('of many taking at once, exactly one holds the turn; the others keep waiting', async () => {
    const signal = new AbortController().signal
    const takers = ['cp-1', 'cp-2', 'cp-3'].map((n) => ({ n, p: service().take(n, signal) }))
    await new Promise((r) => setTimeout(r, 300))
    const done = await Promise.all(takers.map(async (t) => ((await settled(t.p, 1)) ? t.n : undefined)))
    expect(done.filter(Boolean)).to.have.length(1)
    // the rest are let through one by one as each registers
    for (let i = 0; i < 2; i++) {
      const holder = (await api.getLease(CONTROL_PLANE_LEASE.namespace, CONTROL_PLANE_LEASE.name))?.holder
      await registerNode(holder ?? '')
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(await Promise.all(takers.map((t) => settled(t.p, 2_000)))).to.deep.equal([true, true, true])
  })

  it('a node that hangs up leaves the queue', async () => {
    await service().take('cp-1', new AbortController().signal)
    const hangUp = new AbortController()
    const waiting = service().take('cp-2', hangUp.signal)
    hangUp.abort(new Error('the node hung up'))
    await expect(waiting).to.be.rejectedWith('the node hung up')
  })
})
