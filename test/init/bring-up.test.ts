/**
 * `constellation init` brings the cluster up: after kubeadm, the pinned releases are installed with
 * the REAL helm 3 and 4 against the FakeApiServer TEST DOUBLE, which the kubeadm contract fake
 * names in admin.conf as this cluster's API server. The releases are the fixture charts (the
 * workspace config overrides the pinned upstream charts, which are not reachable from here).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { workspacePaths } from '../../src/lib/paths.js'
import { createRunner } from '../../src/lib/system/index.js'
import { Helm } from '../../src/lib/helm/binary/helm.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { HELM_MAJORS, realHelmEnv } from '../support/helm.js'
import { startDaemonProcess, startLocalNode, type LocalNode } from '../support/local-node.js'
import { COREDNS_DEPLOYMENT, overrideChartsWithFixtures } from '../support/upgrade-workspace.js'

const FIXTURES = { cilium: '1.0.0', coredns: '1.0.0', 'cert-manager': '1.0.0' }

describe('constellation init brings the cluster up with the real helm 3 and 4', function () {
  this.timeout(180_000)
  let node: LocalNode
  let api: FakeApiServer
  beforeEach(async () => {
    node = await startLocalNode()
    api = await new FakeApiServer({ dir: path.join(node.dir, 'api') }).start()
    await overrideChartsWithFixtures(node.workspace, FIXTURES)
  })
  afterEach(async () => {
    await node.stop() // its join service watches the API: stop it first
    await api.stop()
  })

  /** Starts the node with admin.conf pointing at the API fake; returns helm's environment. */
  async function startNode(major: 3 | 4) {
    const adminConf = path.join(node.dir, 'api-admin.conf')
    await writeFile(adminConf, api.kubeconfig(), { mode: 0o600 })
    const daemon = await startDaemonProcess(node, {
      KUBEADM_FAKE_API_DIR: path.join(node.dir, 'api'),
      KUBEADM_FAKE_ADMIN_KUBECONFIG: adminConf,
    })
    const env = await realHelmEnv(node.dir, major)
    const helm = () =>
      Helm.detect({
        runner: createRunner(),
        binary: 'helm',
        env,
        kubeconfig: workspacePaths(node.workspace).adminConf,
      })
    const deployed = async () =>
      Object.fromEntries(
        (await (await helm()).listReleases()).map((r) => [r.name, `${r.version} ${r.status}`]),
      )
    return { daemon, env, helm, deployed }
  }

  for (const major of HELM_MAJORS) {
    it(`helm ${major}: installs cilium, coredns and cert-manager after kubeadm, each a visible step`, async () => {
      const { daemon, env, helm, deployed } = await startNode(major)
      const res = await runCli(['init', '-C', node.workspace], { env: { ...env, CONSTELL_NO_SPINNER: '1' } })
      await daemon.expectInitSucceeded(res)
      expect(res.stdout + res.stderr).to.match(
        /Waiting for the Kubernetes API at https:\/\/\S+ to answer helm/,
      )
      expect(res.stdout + res.stderr).to.match(/Installing cilium 1\.0\.0 in kube-system/)
      expect(res.stdout + res.stderr).to.match(/Installing cert-manager 1\.0\.0 in cert-manager/)
      expect(res.stdout).to.match(/Helm releases +cilium 1\.0\.0, coredns 1\.0\.0, cert-manager 1\.0\.0/)
      expect(await deployed()).to.deep.equal({
        cilium: '1.0.0 deployed',
        coredns: '1.0.0 deployed',
        'cert-manager': '1.0.0 deployed',
      })
      // kubeadm ran without kube-proxy: Cilium replaces it, and reaches the API at the endpoint's host
      const h = await helm()
      expect(await h.userValues('cilium', 'kube-system')).to.deep.include({
        kubeProxyReplacement: true,
        k8sServiceHost: '127.0.0.1',
        k8sServicePort: 6443,
      })
      expect(await h.userValues('coredns', 'kube-system')).to.deep.equal({
        service: { clusterIP: '10.96.0.10' },
      })
      expect((await daemon.exited).code).to.equal(0)
    })
  }

  it('a release that fails leaves an initialized cluster and names the one command that finishes it', async () => {
    const { daemon, env, deployed } = await startNode(4)
    // the API refuses coredns's object: helm rolls the install back
    api.failOn({ method: 'PATCH', pathIncludes: 'configmaps/coredns-settings', status: 500, times: 1 })
    const res = await runCli(['init', '-C', node.workspace, '--helm-timeout', '30s'], { env })
    expect(res.code, res.stderr).to.equal(1)
    expect(res.stderr).to.match(
      /the cluster is initialized, but installing its Helm releases failed \(installed: cilium\)/,
    )
    const finish = `constellation upgrade execute --helm --yes -C ${node.workspace}`
    expect(res.stderr).to.include(finish)
    expect(await readFile(workspacePaths(node.workspace).state, 'utf8')).to.match(/clusterID: [0-9a-f]{64}/)
    expect(await deployed()).to.deep.equal({ cilium: '1.0.0 deployed' })
    expect((await daemon.exited).code).to.equal(0)
    // the command it named, as pasted: the missing releases are installed
    const done = await runCli(finish.split(' ').slice(1), { env })
    expect(done.code, done.stderr).to.equal(0)
    expect(await deployed()).to.deep.equal({
      cilium: '1.0.0 deployed',
      coredns: '1.0.0 deployed',
      'cert-manager': '1.0.0 deployed',
    })
  })

  it('--skip-helm-wait installs without waiting for a workload that is not ready yet', async () => {
    const { daemon, env, deployed } = await startNode(4)
    api.keepUnready(COREDNS_DEPLOYMENT)
    const res = await runCli(['init', '-C', node.workspace, '--skip-helm-wait', '--helm-timeout', '5s'], {
      env: { ...env, CONSTELL_NO_SPINNER: '1' },
    })
    await daemon.expectInitSucceeded(res)
    expect(res.stdout).to.match(/Installing coredns 1\.0\.0 in kube-system \(not waiting for it\)/)
    expect(await deployed()).to.deep.equal({
      cilium: '1.0.0 deployed',
      coredns: '1.0.0 deployed',
      'cert-manager': '1.0.0 deployed',
    })
    const dns = api.get('apps/v1', 'deployments', 'coredns', 'kube-system')
    expect((dns?.status as { readyReplicas?: number } | undefined)?.readyReplicas ?? 0).to.equal(0)
    expect((await daemon.exited).code).to.equal(0)
  })

  it('Ctrl-C while helm waits for coredns: exit 130, initialized, and the command that finishes', async () => {
    const { daemon, env, deployed } = await startNode(4)
    const coredns = COREDNS_DEPLOYMENT
    api.keepUnready(coredns)
    // its own temp dir: the values of an interrupted install must leave no file anywhere
    const tmpdir = path.join(node.dir, 'cli-tmp')
    await mkdir(tmpdir)
    const init = spawnCli(['init', '-C', node.workspace], { env: { ...env, TMPDIR: tmpdir } })
    try {
      await eventually('helm to wait for coredns', async () =>
        api.get('v1', 'secrets', 'sh.helm.release.v1.coredns.v1', 'kube-system'),
      )
      init.child.kill('SIGINT')
      const res = await init.result
      expect(res.code, res.stderr).to.equal(130)
      expect(res.stderr).to.include(
        `init interrupted while installing the Helm releases (cilium installed so far): the cluster is initialized; finish with \`constellation upgrade execute --helm --yes -C ${node.workspace}\``,
      )
      expect(await readFile(workspacePaths(node.workspace).state, 'utf8')).to.match(/clusterID: [0-9a-f]{64}/)
      expect((await daemon.exited).code).to.equal(0)
      expect(await readdir(tmpdir)).to.deep.equal([])
    } finally {
      init.child.kill('SIGKILL')
      await init.result
      // the helm init left behind finishes once coredns is ready
      api.makeReady(coredns)
      await eventually('the helm init left to finish', async () =>
        (await deployed()).coredns === '1.0.0 deployed' ? true : undefined,
      )
    }
  })

  it('without helm on PATH: initialized, exit 1, and the hint says what to do', async () => {
    const { daemon } = await startNode(3)
    const empty = path.join(node.dir, 'empty-bin')
    await mkdir(empty)
    const res = await runCli(['init', '-C', node.workspace, '--json'], { env: { PATH: empty } })
    expect(res.code, res.stderr).to.equal(1)
    const out = JSON.parse(res.stdout) as { error: { message: string; hint?: string; kubeconfig?: string } }
    expect(JSON.stringify(out)).to.match(/helm was not found on PATH/)
    expect(JSON.stringify(out)).to.include('constellation upgrade execute --helm --yes')
    expect((await daemon.exited).code).to.equal(0)
  })
})
