import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { exitCodeOf, renderError } from '../../src/lib/errors/index.js'
import { KubeApiError, openKubeApi, openNodeKubeApi, type KubeApi } from '../../src/lib/kube/index.js'
import { expect } from '../support/chai.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { startSilentApiServer } from '../../src/lib/simulator/fake-apiserver-silent.js'
import { makeTempDir } from '../support/temp.js'

const secret = (name: string) => ({
  apiVersion: 'v1' as const,
  kind: 'Secret' as const,
  metadata: { name, namespace: 'kube-system' },
  type: 'Opaque',
  stringData: { password: 'hunter2hunter2' },
})

/** Both KubeApi implementations keep one contract: the library's (operators) and node:https (nodes). */
const IMPLEMENTATIONS = { '@kubernetes/client-node': openKubeApi, 'node:https': openNodeKubeApi }

for (const [implementation, openKubeApi] of Object.entries(IMPLEMENTATIONS))
  describe(`the Kubernetes API client over ${implementation} (FakeApiServer, a test double of the Kubernetes API)`, () => {
    let dir: string
    let cleanup: () => Promise<void>
    let server: FakeApiServer
    let api: KubeApi
    let kubeconfig: string
    beforeEach(async () => {
      ;({ dir, cleanup } = await makeTempDir())
      server = await new FakeApiServer({ dir: path.join(dir, 'api') }).start()
      kubeconfig = path.join(dir, 'admin.conf')
      await writeFile(kubeconfig, server.kubeconfig())
      api = await openKubeApi(kubeconfig)
    })
    afterEach(async () => {
      await server.stop()
      await cleanup()
    })
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => expect.fail('resolved'),
        (e: unknown) => e as Error,
      )

    it('creates a Secret once; the second is 409, and no error repeats the data', async () => {
      await api.createSecret(secret('s'))
      const err = await failure(api.createSecret(secret('s')))
      expect(err).to.be.instanceOf(KubeApiError).and.to.include({ status: 409 })
      expect(err.message).to.match(/creating Secret kube-system\/s at https:\/\/127\.0\.0\.1:\d+: HTTP 409/)
      expect(err.message).not.to.contain('hunter2')
      // kept as the API server keeps it: base64 data, owner-only on disk
      const file = path.join(dir, 'api/namespaces/kube-system/secrets/s.json')
      const stored = JSON.parse(await readFile(file, 'utf8')) as { data: Record<string, string> }
      expect(Buffer.from(stored.data.password ?? '', 'base64').toString()).to.equal('hunter2hunter2')
      expect((await stat(file)).mode & 0o777).to.equal(0o600)
    })

    it('reads a Secret decoded (undefined when absent), and creates one with labels and an owner', async () => {
      expect(await api.getSecret('kube-system', 's')).to.equal(undefined)
      const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'u-1', controller: true }
      const labelled = secret('s')
      await api.createSecret({
        ...labelled,
        metadata: { ...labelled.metadata, labels: { team: 'a' }, ownerReferences: [owner] },
      })
      expect(await api.getSecret('kube-system', 's')).to.deep.equal({ password: 'hunter2hunter2' })
      const file = path.join(dir, 'api/namespaces/kube-system/secrets/s.json')
      const stored = JSON.parse(await readFile(file, 'utf8')) as {
        metadata: { labels?: unknown; ownerReferences?: unknown }
      }
      expect(stored.metadata.labels).to.deep.equal({ team: 'a' })
      expect(stored.metadata.ownerReferences).to.deep.equal([owner])
    })

    it('reads a missing ConfigMap as undefined, creates it, then replaces its data', async () => {
      expect(await api.getConfigMap('kube-system', 'join-config')).to.equal(undefined)
      await api.applyConfigMap('kube-system', 'join-config', { a: '1' })
      await api.applyConfigMap('kube-system', 'join-config', { a: '2' })
      expect((await api.getConfigMap('kube-system', 'join-config'))?.data).to.deep.equal({ a: '2' })
    })

    it('creates a ConfigMap only once (409), lists it by label, deletes it (twice is no error)', async () => {
      await api.createConfigMap('kube-system', 'disk-a', { node: 'w-0' }, { kind: 'disk', owner: 'x' })
      await api.createConfigMap('kube-system', 'disk-b', { node: 'w-1' }, { kind: 'disk', owner: 'y' })
      await api.createConfigMap('kube-system', 'other', { a: '1' })
      const taken = await failure(api.createConfigMap('kube-system', 'disk-a', { node: 'intruder' }))
      expect(taken).to.be.instanceOf(KubeApiError).and.to.include({ status: 409 })
      expect((await api.getConfigMap('kube-system', 'disk-a'))?.data).to.deep.equal({ node: 'w-0' })
      const disks = await api.listConfigMaps('kube-system', 'kind=disk')
      expect(disks.map((d) => [d.name, d.data.node, d.labels.owner]).sort()).to.deep.equal([
        ['disk-a', 'w-0', 'x'],
        ['disk-b', 'w-1', 'y'],
      ])
      expect((await api.listConfigMaps('kube-system', 'kind=disk,owner=y')).map((d) => d.name)).to.deep.equal(
        ['disk-b'],
      )
      await api.deleteConfigMap('kube-system', 'disk-a')
      await api.deleteConfigMap('kube-system', 'disk-a')
      expect(await api.getConfigMap('kube-system', 'disk-a')).to.equal(undefined)
      expect((await api.listConfigMaps('kube-system', 'kind=disk')).map((d) => d.name)).to.deep.equal([
        'disk-b',
      ])
    })

    it('sees Nodes another process wrote into the storage', async () => {
      expect(await api.hasNode('worker-0')).to.equal(false)
      const node = path.join(dir, 'api/nodes/worker-0.json')
      await mkdir(path.dirname(node), { recursive: true })
      await writeFile(
        node,
        JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-0' } }),
      )
      expect(await api.hasNode('worker-0')).to.equal(true)
    })

    it('creates a Lease, replaces it at its resourceVersion, and refuses a stale one with 409', async () => {
      const spec = { holder: 'cp-1', renewed: new Date('2026-01-01T00:00:00Z'), durationSeconds: 300 }
      await api.createLease('kube-system', 'turn', spec)
      expect(await failure(api.createLease('kube-system', 'turn', spec))).to.include({ status: 409 })
      const lease = await api.getLease('kube-system', 'turn')
      expect(lease).to.deep.include({ holder: 'cp-1', durationSeconds: 300 })
      expect(lease?.renewed?.toISOString()).to.equal('2026-01-01T00:00:00.000Z')
      await api.replaceLease('kube-system', 'turn', { ...spec, holder: 'cp-2' }, lease?.resourceVersion ?? '')
      const stale = await failure(
        api.replaceLease('kube-system', 'turn', { ...spec, holder: 'cp-3' }, lease?.resourceVersion ?? ''),
      )
      expect(stale).to.include({ status: 409 })
      expect((await api.getLease('kube-system', 'turn'))?.holder).to.equal('cp-2')
    })

    it('other credentials than the admin kubeconfig: 401, with a hint, exit 1', async () => {
      const other = path.join(dir, 'other.conf')
      await writeFile(other, server.kubeconfig().replace('token: fake-token', 'token: someone-else'))
      const err = await failure(
        (await openKubeApi(other)).applyConfigMap('kube-system', 'join-config', { a: '1' }),
      )
      expect(err).to.be.instanceOf(KubeApiError).and.to.include({ status: 401 })
      expect(exitCodeOf(err)).to.equal(1)
      expect(await api.getConfigMap('kube-system', 'join-config')).to.equal(undefined)
    })

    it('an API server that accepts and never answers: bounded, exit 3 (unreachable)', async () => {
      const silent = await startSilentApiServer()
      try {
        const file = path.join(dir, 'silent.conf')
        await writeFile(file, silent.kubeconfig())
        const err = await failure(
          (await openKubeApi(file, { requestTimeoutMs: 300 })).getConfigMap('kube-system', 'x'),
        )
        expect(err.message).to.match(
          /reading ConfigMap kube-system\/x at https:\/\/127\.0\.0\.1:\d+: no answer within 0.3s/,
        )
        expect(exitCodeOf(err)).to.equal(3)
      } finally {
        await silent.stop()
      }
    })

    it('an unreadable kubeconfig names the file, and never quotes its credentials', async () => {
      const err = await failure(openKubeApi(path.join(dir, 'missing.conf')))
      expect(err.message).to.match(/missing\.conf/)
      const broken = path.join(dir, 'broken.conf')
      await writeFile(broken, server.kubeconfig().replace('token: fake-token', 'token: [s3cr3t-token'))
      const bad = await failure(openKubeApi(broken))
      expect(renderError(bad).lines.join('\n'))
        .to.match(/broken\.conf/)
        .and.not.to.contain('s3cr3t')
    })
  })
