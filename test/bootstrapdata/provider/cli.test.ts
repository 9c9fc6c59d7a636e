/**
 * `constellation bootstrap-data controller` as the built CLI (a daemon): it reconciles against the
 * Kubernetes API contract fake (TEST DOUBLE) as management cluster, logs JSON, stops gracefully on
 * SIGTERM and hands the leader Lease back; bad flags are usage errors.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../../support/chai.js'
import { runCli, spawnCli } from '../../support/cli.js'
import { type FakeApiServer } from '../../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../../src/lib/simulator/fake-apiserver.js'
import { makeTempDir, type TempDir } from '../../support/temp.js'
import { BOOTSTRAP, installCapiCrds, NS, seedCluster, setClusterStatus } from '../../support/capi-objects.js'

describe('bootstrap-data controller (built CLI)', function () {
  this.timeout(60_000)
  let management: FakeApiServer
  let workload: FakeApiServer
  let temp: TempDir
  let kubeconfig: string

  beforeEach(async () => {
    ;[management, workload, temp] = await Promise.all([
      startFakeApiServer(),
      startFakeApiServer(),
      makeTempDir('constell-provider-cli-'),
    ])
    installCapiCrds(management)
    seedCluster(management, workload.kubeconfig())
    kubeconfig = path.join(temp.dir, 'management.kubeconfig')
    await writeFile(kubeconfig, management.kubeconfig(), { mode: 0o600 })
  })
  afterEach(async () => {
    await Promise.all([management.stop(), workload.stop()])
    await temp.cleanup()
  })

  it('writes init data, and on SIGTERM exits 0 and releases the leader Lease', async () => {
    setClusterStatus(management, { infrastructureReady: true })
    const daemon = spawnCli([
      'bootstrap-data',
      'controller',
      '--kubeconfig',
      kubeconfig,
      '--leader-election-namespace',
      NS,
      '--resync',
      '1s',
    ])
    let waited: unknown
    try {
      // the status is written right after the data Secret: wait for the status itself
      const status = () =>
        management.get(BOOTSTRAP, 'kubeadmconfigs', 'cp-0', NS)?.status as Record<string, unknown> | undefined
      const deadline = Date.now() + 30_000
      while (status()?.ready !== true && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      expect(status()).to.include({ ready: true, dataSecretName: 'cp-0' })
      expect(management.get('v1', 'secrets', 'cp-0', NS)).to.not.equal(undefined)
    } catch (err) {
      waited = err
    } finally {
      daemon.child.kill('SIGTERM')
    }
    const result = await daemon.result
    if (waited) throw new Error(`${String(waited)}\ncontroller (exit ${result.code}):\n${result.stderr}`)
    expect(result.code, result.stderr).to.equal(0)
    const lines = result.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.map((l) => l.msg)).to.include('leading: reconciling KubeadmConfigs')
    expect(lines.find((l) => l.msg === 'KubeadmConfig capi-test/cp-0: ready')).to.include({ role: 'init' })
    // no log line carries a key or a token
    expect(result.stderr).to.not.match(/PRIVATE KEY|token-secret/)
    const lease = management.get('coordination.k8s.io/v1', 'leases', 'constellation-bootstrap-provider', NS)
    const spec = (lease?.spec ?? {}) as { holderIdentity?: string }
    expect(spec.holderIdentity ?? '', 'released on a graceful stop').to.equal('')
  })

  it('refuses bad flags and an unreadable kubeconfig with a clear error', async () => {
    const missing = await runCli(['bootstrap-data', 'controller'])
    expect(missing.code).to.equal(2)
    expect(missing.stderr).to.match(/Missing required flag kubeconfig/)
    const version = await runCli([
      'bootstrap-data',
      'controller',
      '--kubeconfig',
      kubeconfig,
      '--api-version',
      'v1alpha3',
    ])
    expect(version.code).to.equal(2)
    expect(version.stderr).to.match(/--api-version=v1alpha3|Expected --api-version/)
    const ttl = await runCli([
      'bootstrap-data',
      'controller',
      '--kubeconfig',
      kubeconfig,
      '--token-ttl',
      'soon',
    ])
    expect(ttl.code).to.equal(2)
    expect(ttl.stderr).to.match(/--token-ttl "soon" is not a duration/)
    const notYaml = path.join(temp.dir, 'broken.kubeconfig')
    await writeFile(notYaml, 'clusters: [\n  secret-stuff: {')
    const broken = await runCli(['bootstrap-data', 'controller', '--kubeconfig', notYaml])
    expect(broken.code).to.equal(1)
    expect(broken.stderr).to.include(`reading kubeconfig ${notYaml}`).and.not.include('secret-stuff')
  })
})
