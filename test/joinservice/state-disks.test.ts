/**
 * The cluster's disk records in the Kubernetes API (FakeApiServer, a test double of it): create-only,
 * found by node, collected with their node; and a control plane's own record.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { openNodeKubeApi, type KubeApi } from '../../src/lib/kube/index.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { collectStateDisks } from '../../src/lib/joinservice/state-disk-collector.js'
import { ownDiskRecord, recordOwnDisk } from '../../src/lib/joinservice/own-disk.js'
import { writeNodeState } from '../../src/lib/nodeconfig/node-state.js'
import { nodePaths } from '../../src/lib/paths.js'
import {
  apiStateDiskRegistry,
  DiskRecordExistsError,
  type StateDiskRecord,
  type StateDiskRegistry,
} from '../../src/lib/joinservice/state-disks.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const uuid = (i: number) => `0b4f5e2a-1c3d-4e5f-8a9b-${String(i).padStart(12, '0')}`
const NOW = new Date('2026-11-27T12:00:00Z')
const record = (node: string, over: Partial<StateDiskRecord> = {}): StateDiskRecord => ({
  node,
  role: 'worker',
  address: '10.0.0.5',
  tpm: `000b${'ab'.repeat(32)}`,
  recordedAt: NOW.toISOString(),
  ...over,
})

describe('state disk records (ConfigMaps in the Kubernetes API)', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let server: FakeApiServer
  let api: KubeApi
  let disks: StateDiskRegistry
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    server = await new FakeApiServer({ dir: path.join(dir, 'api') }).start()
    await writeFile(path.join(dir, 'admin.conf'), server.kubeconfig())
    api = await openNodeKubeApi(path.join(dir, 'admin.conf'))
    disks = apiStateDiskRegistry(api)
  })
  afterEach(async () => {
    await server.stop()
    await cleanup()
  })
  const registerNode = async (name: string) => {
    await mkdir(path.join(dir, 'api/nodes'), { recursive: true })
    await writeFile(path.join(dir, 'api/nodes', `${name}.json`), JSON.stringify({ metadata: { name } }))
  }

  it('creates a record once; a second one for the disk fails naming the record there, which stays', async () => {
    await disks.create(uuid(1), record('worker-0'))
    const err = await disks.create(uuid(1), record('intruder')).then(
      () => expect.fail('created twice'),
      (e: unknown) => e as DiskRecordExistsError,
    )
    expect(err).to.be.instanceOf(DiskRecordExistsError)
    expect(err.owner).to.deep.equal(record('worker-0'))
    expect(await disks.lookup(uuid(1))).to.deep.equal(record('worker-0'))
    expect(await disks.lookup(uuid(2))).to.equal(undefined)
  })

  it("finds a node's disks by its label, and only its own (the label is a digest of the name)", async () => {
    const long = `n${'a'.repeat(200)}.example` // longer than a label value may be
    await disks.create(uuid(1), record('worker-0'))
    await disks.create(uuid(2), record('worker-0'))
    await disks.create(uuid(3), record(long))
    expect((await disks.disksOf('worker-0')).sort()).to.deep.equal([uuid(1), uuid(2)])
    expect(await disks.disksOf(long)).to.deep.equal([uuid(3)])
    expect(await disks.disksOf('worker-1')).to.deep.equal([])
    await disks.remove(uuid(1))
    expect(await disks.disksOf('worker-0')).to.deep.equal([uuid(2)])
  })

  it('collects the records of nodes that are gone, sparing joins under way and nodes still there', async () => {
    const old = new Date(NOW.getTime() - 31 * 60_000).toISOString()
    await disks.create(uuid(1), record('worker-0', { recordedAt: old })) // its Node is there
    await disks.create(uuid(2), record('worker-1', { recordedAt: old })) // its Node was deleted
    await disks.create(uuid(3), record('worker-2')) // joining: no Node yet
    await api.createConfigMap(
      'kube-system',
      `constellation-state-disk-${uuid(4)}`,
      { node: 'x' },
      {
        'constellation.io/state-disk': 'true',
      },
    ) // unreadable: serves nobody
    await api.createConfigMap('kube-system', 'join-config', { a: '1' }) // not a record
    await registerNode('worker-0')
    const removed = await collectStateDisks({
      stateDisks: disks,
      hasNode: (n) => api.hasNode(n),
      clock: () => NOW,
    })
    expect(removed.sort()).to.deep.equal([uuid(2), uuid(4)])
    expect((await disks.list()).map((d) => d.uuid).sort()).to.deep.equal([uuid(1), uuid(3)])
    expect(await api.getConfigMap('kube-system', 'join-config')).to.not.equal(undefined)
  })

  describe("a control plane's own record", () => {
    const silent = () => {
      const lines: string[] = []
      return { lines, log: createLogger({ format: 'json', write: (l) => lines.push(l) }) }
    }

    it("is built from the node state's disk, this node's metadata name and address, and its AK", async () => {
      const paths = nodePaths(path.join(dir, 'root'))
      await mkdir(path.dirname(paths.nodeStateFile), { recursive: true })
      const source = {
        paths,
        self: { name: 'CP_0', role: 'control-plane' as const, vpcIP: '10.0.0.7' },
        readAttestationKeyName: async () => Buffer.from('000bcafe', 'hex'),
        clock: () => NOW,
      }
      await writeNodeState(paths, {
        role: 'control-plane',
        measurementSalt: Buffer.alloc(32),
        diskUuid: uuid(3),
      })
      expect(await ownDiskRecord(source)).to.deep.equal({
        uuid: uuid(3),
        record: {
          node: 'cp-0',
          role: 'control-plane',
          address: '10.0.0.7',
          tpm: '000bcafe',
          recordedAt: NOW.toISOString(),
        },
      })
      expect(await ownDiskRecord({ ...source, self: undefined }), 'no metadata, no record').to.equal(
        undefined,
      )
      await writeNodeState(paths, { role: 'control-plane', measurementSalt: Buffer.alloc(32) })
      expect(await ownDiskRecord(source), 'no disk in the node state').to.equal(undefined)
    })

    it('records nothing for a node without a disk, and logs a failure it cannot retry away', async () => {
      const { lines, log } = silent()
      await recordOwnDisk(disks, async () => undefined, log, new AbortController().signal)
      expect(lines).to.deep.equal([])
      await recordOwnDisk(disks, () => Promise.reject(new Error('no TPM')), log, new AbortController().signal)
      expect(lines.join('\n')).to.match(
        /state disk is not recorded: it cannot rejoin without `constellation recover`.*"error":"no TPM"/,
      )
      const stopped = new AbortController()
      stopped.abort()
      const before = lines.length
      await recordOwnDisk(disks, () => Promise.reject(new Error('stopping')), log, stopped.signal)
      expect(lines, 'a stop is not a failure').to.have.length(before)
    })

    it('tries again when the API does not answer yet, logging each failure', async () => {
      const { lines, log } = silent()
      let calls = 0
      const flaky: StateDiskRegistry = {
        lookup: (id) => disks.lookup(id),
        disksOf: (node) => disks.disksOf(node),
        list: () => disks.list(),
        remove: (id) => disks.remove(id),
        create: (id, rec) =>
          ++calls === 1 ? Promise.reject(new Error('connection refused')) : disks.create(id, rec),
      }
      const own = { uuid: uuid(2), record: record('cp-0', { role: 'control-plane' }) }
      await recordOwnDisk(flaky, async () => own, log, new AbortController().signal)
      expect(calls).to.equal(2)
      expect(await disks.lookup(uuid(2))).to.deep.equal(own.record)
      expect(lines[0]).to.match(
        /Recording this node's state disk failed; trying again.*"attempt":1.*"error":"connection refused"/,
      )
      expect(lines[1]).to.include("Recorded this node's state disk")
    })

    it('tries again when the disk is recorded but its record cannot be read (no owner to compare)', async () => {
      const { lines, log } = silent()
      let calls = 0
      const unreadable: StateDiskRegistry = {
        lookup: (id) => disks.lookup(id),
        disksOf: (node) => disks.disksOf(node),
        list: () => disks.list(),
        remove: (id) => disks.remove(id),
        create: (id, rec) =>
          ++calls === 1 ? Promise.reject(new DiskRecordExistsError(id, undefined)) : disks.create(id, rec),
      }
      const own = { uuid: uuid(3), record: record('cp-0', { role: 'control-plane' }) }
      await recordOwnDisk(unreadable, async () => own, log, new AbortController().signal)
      expect(calls).to.equal(2)
      expect(lines[0]).to.match(
        new RegExp(`trying again.*"attempt":1.*"error":"state disk ${uuid(3)} is recorded already"`),
      )
      expect(lines[1]).to.include("Recorded this node's state disk")
      expect(lines).to.have.length(2)
    })

    it('is created once, and found again after a restart', async () => {
      const { lines, log } = silent()
      const own = { uuid: uuid(1), record: record('cp-0', { role: 'control-plane' }) }
      await recordOwnDisk(disks, async () => own, log, new AbortController().signal)
      await recordOwnDisk(
        disks,
        async () => ({ ...own, record: { ...own.record, recordedAt: 'later' } }),
        log,
        new AbortController().signal,
      )
      expect(await disks.lookup(uuid(1))).to.deep.equal(own.record)
      expect(lines.filter((l) => l.includes("Recorded this node's state disk"))).to.have.length(2)
      expect(lines[0])
        .to.include(`"diskUUID":"${uuid(1)}"`)
        .and.include('"node":"cp-0"')
    })

    it("is never rewritten when the disk is another node's: logged as an error", async () => {
      const { lines, log } = silent()
      await disks.create(uuid(1), record('worker-9'))
      await recordOwnDisk(
        disks,
        async () => ({ uuid: uuid(1), record: record('cp-0') }),
        log,
        new AbortController().signal,
      )
      expect((await disks.lookup(uuid(1)))?.node).to.equal('worker-9')
      expect(lines.join('\n')).to.match(/recorded for another node.*"recordedFor":"worker-9"/)
    })
  })
})
