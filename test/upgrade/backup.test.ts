import { readdir, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { createClusterReader } from '../../src/lib/upgrade/index.js'
import { parseYaml } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import { seedCustomResources } from '../support/upgrade-workspace.js'
import { backupCustomResources, createUpgradeFolder, newUpgradeId } from '../../src/lib/upgrade/backup.js'
import { type ClusterReader } from '../../src/lib/upgrade/kube-reader.js'

describe('pre-upgrade backup of CRDs and custom resources (FakeApiServer)', function () {
  this.timeout(120_000)
  let api: FakeApiServer
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let reader: ClusterReader
  let retried: number[]

  beforeEach(async () => {
    api = await startFakeApiServer()
    tmp = await makeTempDir()
    const kc = { text: api.kubeconfig(), what: 'the fake API server kubeconfig' }
    retried = []
    reader = await createClusterReader(kc, { sleep: async (ms) => void retried.push(ms) })
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  it('backs up 10,000 custom resources, page by page, each to its own file', async () => {
    seedCustomResources(api, 10_000)
    const summary = await backupCustomResources(reader, tmp.dir)
    expect(summary).to.deep.equal({ crds: 2, customResources: 10_001 })
    const root = path.join(tmp.dir, 'backups/fixture.constellation.invalid/v1')
    const namespaces = (await readdir(root)).filter((n) => n.startsWith('ns-')).sort()
    expect(namespaces).to.deep.equal(['ns-0', 'ns-1', 'ns-2', 'ns-3', 'ns-4', 'ns-5', 'ns-6'])
    let files = 0
    for (const ns of namespaces) files += (await readdir(path.join(root, ns, 'Certificate'))).length
    expect(files).to.equal(10_000)
    const sample = parseYaml(
      await readFile(path.join(root, 'ns-2/Certificate/cert-09998.yaml'), 'utf8'),
      'cert-09998.yaml',
    ).value as { metadata: { name: string; namespace: string }; spec: { commonName: string } }
    expect(sample.metadata).to.include({ name: 'cert-09998', namespace: 'ns-2' })
    expect(sample.spec.commonName).to.equal('host-9998.example')
    // Paged: every list asked for at most 500, and the certificates took 20 pages.
    const lists = api.requests.filter((r) => r.path.endsWith('/certificates'))
    expect(lists).to.have.length(20)
    expect(lists.every((r) => r.query.get('limit') === '500')).to.be.true
    expect((await stat(path.join(root, 'ns-2/Certificate/cert-09998.yaml'))).mode & 0o777).to.equal(0o600)
  })

  it('skips versions that are not served and backs up cluster-scoped objects without a namespace level', async () => {
    seedCustomResources(api, 3)
    await backupCustomResources(reader, tmp.dir)
    const paths = api.requests.map((r) => r.path)
    expect(paths.some((p) => p.includes('/v1alpha1/'))).to.be.false
    const issuer = path.join(
      tmp.dir,
      'backups/fixture.constellation.invalid/v1/ClusterIssuer/self-signed.yaml',
    )
    expect(await readFile(issuer, 'utf8')).to.match(/selfSigned: \{\}/)
    expect((await readdir(path.join(tmp.dir, 'backups/crds'))).sort()).to.deep.equal([
      'certificates.fixture.constellation.invalid.yaml',
      'clusterissuers.fixture.constellation.invalid.yaml',
    ])
  })

  it('retries a transient API error (500) and completes', async () => {
    seedCustomResources(api, 3)
    api.failOn({ pathIncludes: '/certificates', status: 500, times: 2 })
    expect(await backupCustomResources(reader, tmp.dir)).to.deep.equal({ crds: 2, customResources: 4 })
    expect(retried).to.deep.equal([500, 1000])
  })

  it('fails on a permanent API error (403) without retrying', async () => {
    seedCustomResources(api, 3)
    api.failOn({ pathIncludes: '/certificates', status: 403 })
    await expect(backupCustomResources(reader, tmp.dir)).to.be.rejectedWith(/listing certificates/)
    expect(retried).to.deep.equal([])
  })

  it('refuses an object name that would escape the backup folder', async () => {
    seedCustomResources(api, 0)
    api.put('fixture.constellation.invalid/v1', 'certificates', {
      apiVersion: 'fixture.constellation.invalid/v1',
      kind: 'Certificate',
      metadata: { name: '../../../../evil', namespace: 'ns-0' },
    })
    await expect(backupCustomResources(reader, tmp.dir)).to.be.rejectedWith(/not a safe file name/)
  })

  it('names upgrade folders upgrade-<UTC timestamp>-<8 hex> and never reuses one', async () => {
    const id = newUpgradeId(new Date('2026-03-04T05:06:07Z'), () => 'abcdef12-3456-7890-abcd-ef1234567890')
    expect(id).to.equal('upgrade-20260304050607-abcdef12')
    const dir = await createUpgradeFolder(path.join(tmp.dir, 'constellation-upgrade'), id)
    expect((await stat(dir)).mode & 0o777).to.equal(0o700)
    await expect(createUpgradeFolder(path.join(tmp.dir, 'constellation-upgrade'), id)).to.be.rejectedWith(
      /EEXIST/,
    )
  })
})
