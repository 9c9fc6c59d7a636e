/**
 * One node's upgrade step end to end on local nodes: the real installer (data: URL components,
 * sha256-checked), the kubeadm contract fake doing `upgrade plan/apply/node` against the API fake's
 * storage, the systemctl fake restarting the kubelet unit, and the kubelet stand-in reporting the
 * installed kubelet's version to the API fake. A bad hash stops before anything changes; a failing
 * kubeadm is reported with its own words and leaves the old kubelet running.
 */
import { createHash } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import https from 'node:https'
import path from 'node:path'
import { parse } from 'yaml'
import { objectFile } from '../../../simulator/api-layout.js'
import { stageComponents } from '../../../src/lib/bootstrapper/components/installer.js'
import {
  NodeUpgradeError,
  upgradeNode,
  type NodeUpgradeDeps,
} from '../../../src/lib/bootstrapper/upgrade/node-upgrade.js'
import type { NodeUpgradeRequest } from '../../../src/lib/nodeupgrade/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { FakeApiServer, simulatorPaths } from '../../../src/lib/simulator/index.js'
import { createRunner, type Runner } from '../../../src/lib/system/index.js'
import { silentLogger } from '../../../src/lib/system/logger.js'
import type { KubernetesComponent } from '../../../src/lib/versions/index.js'
import { expect } from '../../support/chai.js'
import { REPO_ROOT } from '../../support/cli.js'
import { installFakeSystemd, type FakeSystemd } from '../../support/fake-systemd.js'
import { KUBEADM_FAKE } from '../../support/kubeadm-fake.js'
import { makeTempDir, type TempDir } from '../../support/temp.js'

const KUBELET_STAND_IN = path.join(path.dirname(simulatorPaths(REPO_ROOT).kubeletUnit), 'kubelet')
const PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']
const FROM = 'v1.31.13'
const TO = 'v1.32.9'

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`
const dataComponent = (bytes: Buffer, installPath: string): KubernetesComponent => ({
  url: `data:application/octet-stream;base64,${bytes.toString('base64')}`,
  hash: sha(bytes),
  installPath,
  extract: false,
})
const launcher = (env: string, script: string) =>
  Buffer.from(`#!/bin/sh\n${env} exec '${process.execPath}' '${script}' "$@"\n`)

/** The simulator's components of `version`: kubeadm and kubelet launchers, kubectl, an image patch. */
function componentsOf(version: string): KubernetesComponent[] {
  const image = `registry.k8s.io/kube-apiserver:${version}@sha256:${'b'.repeat(64)}`
  return [
    dataComponent(launcher(`KUBEADM_FAKE_VERSION=${version}`, KUBEADM_FAKE), '/run/state/bin/kubeadm'),
    dataComponent(launcher(`KUBELET_FAKE_VERSION=${version}`, KUBELET_STAND_IN), '/run/state/bin/kubelet'),
    dataComponent(Buffer.from(`#!/bin/sh\necho kubectl ${version}\n`), '/run/state/bin/kubectl'),
    dataComponent(
      Buffer.from(JSON.stringify([{ op: 'replace', path: '/spec/containers/0/image', value: image }])),
      '/opt/kubernetes/patches/kube-apiserver+json.json',
    ),
  ]
}

interface LocalNode {
  name: string
  root: string
  systemd: FakeSystemd
  runner: Runner
  deps: NodeUpgradeDeps
}

describe('node upgrade step (installer, kubeadm fake, systemctl fake, kubelet stand-in, API fake)', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let api: FakeApiServer
  let apiDir: string
  let log: string
  const nodes: LocalNode[] = []

  const nodeObject = (name: string) =>
    Promise.resolve(
      api.get('v1', 'nodes', name) as { status?: { nodeInfo?: { kubeletVersion?: string } } } | undefined,
    ).then((n) => n ?? {})
  /** GET /version from the API fake, trusting its CA as a client of the kubeconfig would. */
  async function serverVersion(): Promise<string> {
    const kc = parse(api.kubeconfig()) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[]
    }
    const cluster = kc.clusters[0]!.cluster
    const ca = Buffer.from(cluster['certificate-authority-data'], 'base64')
    const body = await new Promise<string>((resolve, reject) =>
      https
        .get(new URL('/version', cluster.server), { ca }, (res) => {
          let text = ''
          res.on('data', (d: Buffer) => (text += d.toString()))
          res.on('end', () => resolve(text))
        })
        .on('error', reject),
    )
    return (JSON.parse(body) as { gitVersion: string }).gitVersion
  }
  const waitFor = async (what: string, check: () => Promise<boolean>, ms = 20_000) => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 200)))
      if (await check()) return
    throw new Error(`timed out waiting for ${what}`)
  }

  /** A node as kubeadm init/join left it at FROM, its kubelet running (the FROM launcher installed). */
  async function makeNode(name: string, controlPlane: boolean): Promise<LocalNode> {
    const root = path.join(tmp.dir, name)
    const paths = nodePaths(root)
    await mkdir(paths.manifestsDir, { recursive: true })
    const kubeconfig = api.kubeconfig()
    if (controlPlane) await writeFile(paths.adminConf, kubeconfig, { mode: 0o600 })
    await writeFile(path.join(paths.kubernetesDir, 'kubelet.conf'), kubeconfig, { mode: 0o600 })
    if (controlPlane)
      for (const c of PODS)
        await writeFile(
          path.join(paths.manifestsDir, `${c}.yaml`),
          `apiVersion: v1\nkind: Pod\nmetadata: {name: ${c}}\nspec: {containers: [{name: ${c}, image: 'registry.k8s.io/${c}:${FROM}'}]}\n`,
        )
    await mkdir(path.join(root, 'var/lib/kubelet'), { recursive: true })
    await writeFile(
      path.join(root, 'var/lib/kubelet/kubeadm-flags.env'),
      `KUBELET_KUBEADM_ARGS="--hostname-override=${name}"\n`,
    )
    if (controlPlane) {
      await mkdir(path.dirname(paths.componentsFile), { recursive: true })
      await writeFile(paths.componentsFile, '[]\n')
    }
    // the FROM components as init or join installed them
    const staged = await stageComponents(componentsOf(FROM), installerDeps(root))
    await staged.install()
    await staged.discard()
    api.put('v1', 'nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: controlPlane ? { 'node-role.kubernetes.io/control-plane': '' } : {} },
      status: {
        nodeInfo: { kubeletVersion: FROM },
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    })
    const systemd = await installFakeSystemd({
      dir: path.join(tmp.dir, `${name}-systemd`),
      nodeConfig: '/nonexistent',
      root,
    })
    const env = {
      ...systemd.env,
      KUBEADM_FAKE_API_DIR: apiDir,
      KUBEADM_FAKE_LOG: log,
      CONSTELL_MINI_NODE_GRACE_PERIOD: '40s',
    }
    const real = createRunner()
    const runner: Runner = {
      run: (file, args, opts) =>
        real.run(file, args, { ...opts, env: { ...process.env, ...env, ...opts?.env } }),
    }
    await runner.run('systemctl', ['start', 'kubelet.service'])
    const node: LocalNode = {
      name,
      root,
      systemd,
      runner,
      deps: {
        paths,
        kubeadm: paths.kubeadm,
        runner,
        stage: (c) => stageComponents(c, installerDeps(root)),
        log: silentLogger,
      },
    }
    nodes.push(node)
    return node
  }

  const installerDeps = (root: string) => ({
    root,
    stagingDir: nodePaths(root).componentStagingDir,
    get: () => Promise.reject(new Error('no network in this test')),
    log: silentLogger,
  })

  const clusterVersion = async () => {
    const cm = JSON.parse(
      await readFile(
        objectFile(apiDir, { resource: 'configmaps', namespace: 'kube-system', name: 'kubeadm-config' }),
        'utf8',
      ),
    ) as { data: { ClusterConfiguration: string } }
    return (parse(cm.data.ClusterConfiguration) as { kubernetesVersion: string }).kubernetesVersion
  }
  const kubeadmLog = async () =>
    (await readFile(log, 'utf8').catch(() => ''))
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { command: string; node: string; ok: boolean })
      .map((l) => `${l.command} ${l.node} ${l.ok ? 'ok' : 'failed'}`)
  const installedKubeadmVersion = async (n: LocalNode) =>
    (await n.runner.run(n.deps.kubeadm, ['version', '-o', 'short'])).stdout.trim()

  beforeEach(async () => {
    tmp = await makeTempDir()
    apiDir = path.join(tmp.dir, 'api')
    log = path.join(tmp.dir, 'kubeadm.log')
    api = await new FakeApiServer({ dir: apiDir }).start()
    for (const [name, text] of [
      ['kubeadm-config', { ClusterConfiguration: `kubernetesVersion: ${FROM}\nclusterName: test\n` }],
      [
        'kubelet-config',
        { kubelet: 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n' },
      ],
    ] as const)
      api.put('v1', 'configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'kube-system' },
        data: text,
      })
  })
  afterEach(async () => {
    for (const n of nodes.splice(0)) await n.systemd.stop()
    await api.stop()
    await tmp.cleanup()
  })

  const request = (step: NodeUpgradeRequest['step'], components = componentsOf(TO)): NodeUpgradeRequest => ({
    kubernetesVersion: TO,
    components,
    step,
  })

  it('upgrades the first control plane, then a worker: kubeadm in order, the kubelet restarted at the new version', async () => {
    const cp = await makeNode('cp-0', true)
    const worker = await makeNode('w-0', false)
    await waitFor(
      'the kubelets to report v1.31.13',
      async () => (await nodeObject('w-0')).status?.nodeInfo?.kubeletVersion === FROM,
    )
    const before = await cp.systemd.pid('kubelet.service')

    const applied = await upgradeNode(request('apply'), cp.deps)
    expect(applied.kubeadmOutput).to.include(
      `SUCCESS! A control plane node of your cluster was upgraded to "${TO}"`,
    )
    expect(await clusterVersion()).to.equal(TO)
    expect(await serverVersion()).to.equal(TO)
    expect(await installedKubeadmVersion(cp)).to.equal(TO)
    expect(
      await readFile(path.join(cp.root, 'etc/kubernetes/manifests/kube-apiserver.yaml'), 'utf8'),
    ).to.include(`kube-apiserver:${TO}@sha256:`)
    expect(await cp.systemd.pid('kubelet.service')).to.not.equal(before)
    await waitFor(
      'cp-0 at v1.32.9',
      async () => (await nodeObject('cp-0')).status?.nodeInfo?.kubeletVersion === TO,
    )
    // the control plane's join service hands out what it runs now
    expect(JSON.parse(await readFile(cp.deps.paths.componentsFile, 'utf8'))).to.have.length(4)

    await upgradeNode(request('node'), worker.deps)
    await waitFor(
      'w-0 at v1.32.9',
      async () => (await nodeObject('w-0')).status?.nodeInfo?.kubeletVersion === TO,
    )
    expect(await kubeadmLog()).to.deep.equal([
      'upgrade plan cp-0 ok',
      'upgrade apply cp-0 ok',
      'upgrade node w-0 ok',
    ])
  })

  it('changes nothing when a component has a wrong hash: no kubeadm call, the old kubelet keeps running', async () => {
    const cp = await makeNode('cp-0', true)
    const pid = await cp.systemd.pid('kubelet.service')
    const kubeadmBefore = await readFile(cp.deps.kubeadm)
    const components = componentsOf(TO)
    components[2] = { ...components[2]!, hash: `sha256:${'0'.repeat(64)}` }
    const err = await upgradeNode(request('apply', components), cp.deps).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).to.be.instanceOf(NodeUpgradeError)
    expect(err).to.include({ phase: 'download', nodeChanged: false })
    expect((err as Error).message).to.match(/sha256 mismatch.*nothing on the node was changed/)
    expect(await readFile(cp.deps.kubeadm)).to.deep.equal(kubeadmBefore)
    expect(await kubeadmLog()).to.deep.equal([])
    expect(await clusterVersion()).to.equal(FROM)
    expect(await cp.systemd.pid('kubelet.service')).to.equal(pid)
  })

  it("reports kubeadm's own words when kubeadm fails, and leaves the old kubelet in place", async () => {
    const cp = await makeNode('cp-0', true)
    const runner: Runner = {
      run: (file, args, opts) =>
        cp.runner.run(file, args, { ...opts, env: { KUBEADM_FAKE_FAIL: 'upgrade-apply' } }),
    }
    const kubeletBefore = await readFile(cp.deps.paths.kubelet)
    const err = (await upgradeNode(request('apply'), { ...cp.deps, runner }).then(
      () => undefined,
      (e: unknown) => e,
    )) as NodeUpgradeError
    expect(err).to.be.instanceOf(NodeUpgradeError)
    expect(err.phase).to.equal('kubeadm')
    expect(err.nodeChanged).to.equal(true)
    expect(err.message).to.match(/^kubeadm upgrade apply v1\.32\.9 failed: /)
    expect(err.kubeadmOutput).to.include("couldn't upgrade control plane")
    expect(await readFile(cp.deps.paths.kubelet)).to.deep.equal(kubeletBefore)
    expect(await kubeadmLog()).to.deep.equal(['upgrade plan cp-0 ok', 'upgrade apply cp-0 failed'])
  })

  const refusals: Record<string, { req: () => NodeUpgradeRequest; want: RegExp }> = {
    'a version that is no patch release': {
      req: () => ({ ...request('apply'), kubernetesVersion: 'v1.32' }),
      want: /not of the form v1\.32\.9/,
    },
    'components without a kubelet': {
      req: () => ({
        ...request('node'),
        components: componentsOf(TO).filter((c) => !c.installPath.endsWith('kubelet')),
      }),
      want: /install nothing at \/run\/state\/bin\/kubelet/,
    },
    'a component without a hash': {
      req: () => ({ ...request('node'), components: componentsOf(TO).map((c) => ({ ...c, hash: '' })) }),
      want: /is not sha256:<64 hex digits>/,
    },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses ${name} before downloading anything`, async () => {
      const staged: string[] = []
      const err = await upgradeNode(tc.req(), {
        paths: nodePaths(tmp.dir),
        kubeadm: '/nonexistent',
        runner: createRunner(),
        stage: (c) => {
          staged.push(...c.map((x) => x.url))
          return Promise.reject(new Error('must not be called'))
        },
        log: silentLogger,
      }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).to.be.instanceOf(NodeUpgradeError)
      expect(err).to.include({ phase: 'request', nodeChanged: false })
      expect((err as Error).message).to.match(tc.want)
      expect(staged).to.deep.equal([])
    })

  it('refuses `apply` on a worker (no admin.conf)', async () => {
    const worker = await makeNode('w-0', false)
    const err = (await upgradeNode(request('apply'), worker.deps).catch(
      (e: unknown) => e,
    )) as NodeUpgradeError
    expect(err.phase).to.equal('kubeadm')
    expect(err.message).to.include('runs on a control plane')
  })
})
