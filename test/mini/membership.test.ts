/**
 * `mini add` and `mini remove` refuse, before anything starts or changes, what they cannot do: no
 * cluster, a name Kubernetes would refuse or one the cluster has, a node it does not have. The
 * cluster is a record only (no node boots); the io is a stub that fails if anything is run.
 */
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { exitCodeOf } from '../../src/lib/errors/index.js'
import type { MiniIo } from '../../src/lib/mini/cluster.js'
import { readMiniRecord, writeMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import { addMiniNode, removeMiniNode } from '../../src/lib/mini/membership.js'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const stubIo = {
  runner: { run: () => Promise.reject(new Error('nothing may run')) },
  progress: () => {},
} as unknown as MiniIo // only these two may be touched before a refusal

const record = (): MiniRecord => ({
  version: 1,
  startedAt: new Date().toISOString(),
  network: { mode: 'loopback', id: randomBytes(3).toString('hex'), prefix: '127.99.1' },
  createdFiles: [],
  createdWorkspace: true,
  nodes: [
    { name: 'control-plane-0', role: 'control-plane', index: 0, address: '127.99.1.2' },
    { name: 'worker-0', role: 'worker', index: 1, address: '127.99.1.3' },
  ],
})

describe('mini add / mini remove: refusals before anything changes', () => {
  let tmp: TempDir
  let ws: string
  beforeEach(async () => {
    tmp = await makeTempDir()
    ws = path.join(tmp.dir, 'ws')
  })
  afterEach(async () => tmp.cleanup())
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('resolved'),
      (e: unknown) => e as Error,
    )
  const add = (name: string) => addMiniNode({ workspace: ws, name, role: 'worker', timeoutMs: 1000 }, stubIo)

  it('no cluster in the workspace', async () => {
    expect((await failure(add('worker-1'))).message).to.equal(`no mini cluster in ${ws}`)
  })

  const cases: Record<string, { name: string; want: string; exit: number }> = {
    'a name Kubernetes refuses': {
      name: 'Worker_1',
      want: 'node name "Worker_1" is not a lower-case RFC 1123 label of at most 32 characters',
      exit: 2,
    },
    'a name the cluster has': {
      name: 'worker-0',
      want: `the mini cluster in WS has a node worker-0 already`,
      exit: 1,
    },
  }
  for (const [label, tc] of Object.entries(cases))
    it(`mini add refuses ${label}, leaving the record as it was`, async () => {
      await writeMiniRecord(ws, record())
      const before = await readMiniRecord(ws)
      const err = await failure(add(tc.name))
      expect(err.message).to.equal(tc.want.replace('WS', ws))
      expect(exitCodeOf(err)).to.equal(tc.exit)
      expect(await readMiniRecord(ws)).to.deep.equal(before)
    })

  it('mini remove refuses a node the cluster does not have', async () => {
    await writeMiniRecord(ws, record())
    const err = await failure(
      removeMiniNode(
        { workspace: ws, name: 'worker-7', yes: true },
        {
          io: stubIo,
          openNodeAdmin: () => Promise.reject(new Error('no API needed')),
          kubeconfig: 'unused',
          showPlan: () => {},
        },
      ),
    )
    expect(err.message).to.equal(`the mini cluster in ${ws} has no node "worker-7"`)
  })
})
