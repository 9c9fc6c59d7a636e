/**
 * The real helm 3.17.3 and 4.1.4, driven through the CLI's own Helm class (so with exactly the
 * flags an upgrade uses), against the FakeApiServer TEST DOUBLE of the Kubernetes API: install
 * with CRDs, upgrade, a failing upgrade that helm rolls back itself (v3 --atomic, v4
 * --rollback-on-failure), the explicit rollback. And the real kubectl 1.35 running its normal
 * commands against the same fake. This is the contract check of the fake: what these programs
 * need, it must serve (discovery, OpenAPI v3, protobuf request bodies, server-side apply, CRDs).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRunner } from '../../src/lib/system/index.js'
import { runProcess } from '../../src/lib/system/process.js'
import { Helm } from '../../src/lib/helm/binary/helm.js'
import { expect } from '../support/chai.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { FIXTURE_CHARTS, HELM_MAJORS, realHelm, realKubectl } from '../support/helm.js'
import { makeTempDir } from '../support/temp.js'

const CRD = 'certificates.fixture.constellation.invalid'

describe('real helm 3 and 4, and kubectl 1.35, against the Kubernetes API contract fake', function () {
  this.timeout(180_000)
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let api: FakeApiServer
  let kubeconfig: string
  let env: NodeJS.ProcessEnv
  let values: string

  beforeEach(async () => {
    tmp = await makeTempDir()
    api = await new FakeApiServer().start()
    kubeconfig = path.join(tmp.dir, 'kubeconfig')
    await writeFile(kubeconfig, api.kubeconfig(), { mode: 0o600 })
    values = path.join(tmp.dir, 'values.yaml')
    await writeFile(values, 'greeting: hello\n')
    // helm caches repositories and config under HOME; keep them in the temp dir
    const home = path.join(tmp.dir, 'home')
    await mkdir(home)
    env = { PATH: process.env.PATH, HOME: home, XDG_CACHE_HOME: home, XDG_CONFIG_HOME: home }
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  const chart = (version: string) => ({
    name: 'cert-manager',
    chart: path.join(FIXTURE_CHARTS, 'cert-manager', version),
    version,
    namespace: 'cert-manager',
  })
  const release = async (helm: Helm) => (await helm.listReleases()).find((r) => r.name === 'cert-manager')

  for (const major of HELM_MAJORS)
    it(`helm ${major}: installs with its CRD, upgrades, rolls a failing upgrade back itself, and rolls back on request`, async () => {
      const helm = await Helm.detect({
        runner: createRunner(),
        binary: await realHelm(major),
        env,
        kubeconfig,
      })
      await helm.upgrade(chart('1.0.0'), { file: values }, 60_000)
      expect(await release(helm)).to.include({ version: '1.0.0', status: 'deployed', revision: 1 })
      const crd = api.get('apiextensions.k8s.io/v1', 'customresourcedefinitions', CRD)
      expect(crd, 'the CRD from crds/').to.not.equal(undefined)
      const settings = api.get('v1', 'configmaps', 'cert-manager-settings', 'cert-manager')
      expect(settings?.data).to.include({ greeting: 'hello' })
      // the CRD's resource is served once it is stored, as discovery lists it
      expect(api.resourceTypes().map((t) => `${t.group}/${t.resource}`)).to.include(
        'fixture.constellation.invalid/certificates',
      )

      await helm.upgrade(chart('1.1.0'), { file: values }, 60_000)
      expect(await release(helm)).to.include({ version: '1.1.0', status: 'deployed', revision: 2 })

      // every write to the release's ConfigMap fails once: helm's own rollback restores 1.1.0
      api.failOn({ pathIncludes: 'configmaps/cert-manager-settings', method: 'PATCH', status: 500 })
      await expect(helm.upgrade(chart('1.2.0'), { yaml: 'greeting: hello\n' }, 60_000)).to.be.rejected
      const afterFailure = await release(helm)
      expect(afterFailure).to.include({ version: '1.1.0', status: 'deployed' })
      expect(afterFailure?.revision).to.equal(4) // 3 failed, 4 the rollback

      await helm.rollback('cert-manager', 'cert-manager', 60_000)
      expect(await release(helm)).to.include({ status: 'deployed' })
      // helm stores its releases as Secrets (sent as protobuf), one per revision
      const stored = api
        .list('v1', 'secrets', 'cert-manager')
        .filter((s) => s.metadata.labels?.owner === 'helm')
      expect(stored.length).to.be.at.least(4)
    })

  it('kubectl: version, create (protobuf), get, apply, label and delete', async () => {
    const kubectl = await realKubectl()
    const k = async (...args: string[]) => {
      const r = await runProcess(kubectl, ['--kubeconfig', kubeconfig, ...args], { env, timeoutMs: 60_000 })
      expect(r.code, `kubectl ${args.join(' ')}: ${r.stderr}`).to.equal(0)
      return r.stdout
    }
    expect(await k('version', '-o', 'json')).to.include('"gitVersion": "v1.31.13"')
    await k('create', 'namespace', 'demo')
    await k('create', 'configmap', 'one', '-n', 'demo', '--from-literal=a=b')
    expect(api.get('v1', 'configmaps', 'one', 'demo')?.data).to.deep.equal({ a: 'b' })
    const manifest = path.join(tmp.dir, 'two.yaml')
    await writeFile(
      manifest,
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: demo}\ndata: {c: d}\n',
    )
    await k('apply', '-f', manifest)
    await k('apply', '--server-side', '-f', manifest)
    await k('label', 'configmap', 'two', '-n', 'demo', 'team=x')
    const listed = JSON.parse(await k('get', 'configmaps', '-n', 'demo', '-l', 'team=x', '-o', 'json')) as {
      items: Array<{ metadata: { name: string } }>
    }
    expect(listed.items.map((i) => i.metadata.name)).to.deep.equal(['two'])
    await k('delete', 'configmap', 'one', '-n', 'demo')
    expect(api.get('v1', 'configmaps', 'one', 'demo')).to.equal(undefined)
  })
})
