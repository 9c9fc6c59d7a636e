import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node'
import { connect } from 'node:net'
import { expect } from '../support/chai.js'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { apiTokenRegistrar, createTokenIssuer, openNodeKubeApi } from '../../src/lib/kube/index.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir } from '../support/temp.js'
import { strategicMergePatch } from '../../src/lib/simulator/fake-apiserver-rest.js'

// The fake is a test double; this checks it speaks what the real client sends and expects.
describe('FakeApiServer (test double) with @kubernetes/client-node', () => {
  let api: FakeApiServer
  let kc: KubeConfig
  beforeEach(async () => {
    api = await startFakeApiServer()
    kc = new KubeConfig()
    kc.loadFromString(api.kubeconfig())
  })
  afterEach(() => api.stop())

  it('creates a secret, refuses a duplicate with 409, and reads it back', async () => {
    const core = kc.makeApiClient(CoreV1Api)
    const body = {
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
    }
    await core.createNamespacedSecret({ namespace: 'kube-system', body })
    await expect(core.createNamespacedSecret({ namespace: 'kube-system', body })).to.be.rejectedWith(
      /409|AlreadyExists/,
    )
    const got = await core.readNamespacedSecret({ name: 'bootstrap-token-abcdef', namespace: 'kube-system' })
    expect(got.type).to.equal('bootstrap.kubernetes.io/token')
  })

  it('pages cluster-wide custom object lists with limit and continue', async () => {
    for (let i = 0; i < 25; i++)
      api.put('example.com/v1', 'widgets', {
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: `w${String(i).padStart(2, '0')}`, namespace: i % 2 ? 'a' : 'b' },
      })
    const custom = kc.makeApiClient(CustomObjectsApi)
    const names: string[] = []
    let token: string | undefined
    do {
      const page = (await custom.listClusterCustomObject({
        group: 'example.com',
        version: 'v1',
        plural: 'widgets',
        limit: 10,
        _continue: token,
      })) as {
        items: Array<{ metadata: { name: string } }>
        metadata: { continue?: string }
      }
      names.push(...page.items.map((i) => i.metadata.name))
      token = page.metadata.continue
    } while (token)
    expect(names).to.have.length(25)
    expect(new Set(names).size).to.equal(25)
  })

  it('keeps a Namespace as a file with dir, and lists it again from there', async () => {
    const { dir, cleanup } = await makeTempDir()
    const files = await new FakeApiServer({ dir }).start()
    try {
      const client = new KubeConfig()
      client.loadFromString(files.kubeconfig())
      await client.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'on-disk' } } })
      const names = (await client.makeApiClient(CoreV1Api).listNamespace()).items.map((n) => n.metadata?.name)
      expect(names).to.include('on-disk')
    } finally {
      await files.stop()
      await cleanup()
    }
  })

  it('fails a request when told to', async () => {
    api.failOn({ pathIncludes: '/secrets', status: 500 })
    const core = kc.makeApiClient(CoreV1Api)
    await expect(core.listNamespacedSecret({ namespace: 'x' })).to.be.rejectedWith(/500/)
    expect((await core.listNamespacedSecret({ namespace: 'x' })).items).to.deep.equal([])
  })
})

describe('FakeApiServer (test double): strategic merge patch as helm 3 sends it', () => {
  it('merges containers by name, obeys the directives and never stores them', () => {
    const template = {
      metadata: { labels: { app: 'dns' } },
      spec: {
        containers: [
          { name: 'dns', image: 'dns:1.1.0', ports: [{ name: 'dns', containerPort: 53 }] },
          { name: 'sidecar', image: 'side:1' },
        ],
      },
    }
    // what helm 3's three-way patch of a rollback looks like: one field changed, the order kept
    const patch = {
      spec: {
        '$setElementOrder/containers': [{ name: 'dns' }, { name: 'sidecar' }],
        containers: [{ name: 'dns', image: 'dns:1.0.0' }],
      },
    }
    expect(strategicMergePatch(template, patch)).to.deep.equal({
      metadata: { labels: { app: 'dns' } },
      spec: {
        containers: [
          { name: 'dns', image: 'dns:1.0.0', ports: [{ name: 'dns', containerPort: 53 }] },
          { name: 'sidecar', image: 'side:1' },
        ],
      },
    })
    const deleted = strategicMergePatch(template, {
      spec: { containers: [{ name: 'sidecar', $patch: 'delete' }] },
    }) as typeof template
    expect(deleted.spec.containers.map((c) => c.name)).to.deep.equal(['dns'])
  })
})

describe('FakeApiServer.stop', () => {
  it('does not wait for a client that connected but has not finished its TLS handshake', async function () {
    this.timeout(20_000)
    const api = await startFakeApiServer()
    // a client that reconnects while the server stops (a join service's watch) is such a socket
    const socket = connect(Number(new URL(api.url).port), '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    const started = Date.now()
    try {
      await api.stop()
      expect(Date.now() - started, 'stop() returned while the socket was open').to.be.below(5_000)
    } finally {
      socket.destroy()
    }
  })
})

describe("FakeApiServer (test double): kubeadm's tokencleaner", () => {
  const tokenSecrets = (api: FakeApiServer) =>
    api
      .list('v1', 'secrets', 'kube-system')
      .map((s) => s.metadata.name)
      .sort()

  it('deletes expired bootstrap tokens, keeping live ones, tokens without expiry and other Secrets', async () => {
    const api = await startFakeApiServer()
    try {
      const registrar = apiTokenRegistrar(await openKubeApiFor(api))
      const longAgo = () => new Date(Date.now() - 60 * 60_000)
      await createTokenIssuer(registrar, longAgo).issue() // its 15 minutes are over
      const live = await createTokenIssuer(registrar, () => new Date()).issue()
      api.put('v1', 'secrets', {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'bootstrap.kubernetes.io/token',
        metadata: { name: 'bootstrap-token-noexp', namespace: 'kube-system' },
        data: { 'token-id': Buffer.from('noexp').toString('base64') },
      })
      api.put('v1', 'secrets', {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: { name: 'other', namespace: 'kube-system' },
        data: { expiration: Buffer.from('2000-01-01T00:00:00Z').toString('base64') },
      })
      expect(tokenSecrets(api)).to.have.length(4)
      expect(api.cleanExpiredTokens()).to.have.length(1)
      expect(tokenSecrets(api)).to.deep.equal(
        [`bootstrap-token-${live.split('.')[0]}`, 'bootstrap-token-noexp', 'other'].sort(),
      )
    } finally {
      await api.stop()
    }
  })

  it('runs by itself while the server runs', async () => {
    const api = await new FakeApiServer({ tokenCleanIntervalMs: 20 }).start()
    try {
      const registrar = apiTokenRegistrar(await openKubeApiFor(api))
      await createTokenIssuer(registrar, () => new Date(Date.now() - 60 * 60_000)).issue()
      await eventually('the expired token gone', async () =>
        tokenSecrets(api).length === 0 ? true : undefined,
      )
    } finally {
      await api.stop()
    }
  })
})

/** A node-side KubeApi for `api`, its kubeconfig in a temp folder that `cleanup` removes. */
async function openKubeApiFor(api: FakeApiServer) {
  const { dir, cleanup } = await makeTempDir()
  const file = path.join(dir, 'admin.conf')
  await writeFile(file, api.kubeconfig())
  const client = await openNodeKubeApi(file)
  await cleanup() // read once: nothing needs the file after
  return client
}
