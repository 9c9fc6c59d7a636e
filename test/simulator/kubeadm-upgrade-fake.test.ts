/**
 * The kubeadm contract fake's `upgrade plan`, `upgrade apply` and `upgrade node`, held to kubeadm's
 * documentation: the flags each takes (and pflag's boolean syntax), preflight (admin.conf, every
 * control plane Ready, the static pods), the version policy (no skipped minor, no downgrade, kubeadm
 * first), the confirmation, and what they rewrite: the static pods, kube-system/kubeadm-config's
 * ClusterConfiguration, kube-system/kubelet-config and the node's /var/lib/kubelet/config.yaml.
 * Then the simulator reports the new versions: the API fake's /version, the kubelet stand-in's.
 */
import { createHash } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { objectFile } from '../../simulator/api-layout.js'
import { versionInfo } from '../../src/lib/simulator/fake-apiserver-info.js'
import { simulatedComponents, simulatorPaths } from '../../src/lib/simulator/index.js'
import { runProcess } from '../../src/lib/system/process.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { KUBEADM_FAKE } from '../support/kubeadm-fake.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']

interface World {
  dir: string
  api: string
  log: string
  /** A node root: cp-0 (a control plane) or w-0 (a worker). */
  root(node: string): string
}

async function writeJson(file: string, obj: unknown) {
  await mkdir(path.dirname(file), { recursive: true })
  await writeFile(file, JSON.stringify(obj) + '\n')
}

const cmFile = (api: string, name: string) =>
  objectFile(api, { resource: 'configmaps', namespace: 'kube-system', name })

/** A cluster as `kubeadm init` and `join` of the fake leave it, at `version`. */
async function makeWorld(
  dir: string,
  version = 'v1.31.13',
  opts: { cpReady?: boolean } = {},
): Promise<World> {
  const api = path.join(dir, 'api')
  const root = (node: string) => path.join(dir, node)
  await writeJson(cmFile(api, 'kubeadm-config'), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
    data: { ClusterConfiguration: `kubernetesVersion: ${version}\nclusterName: mini\n` },
  })
  await writeJson(cmFile(api, 'kubelet-config'), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kubelet-config', namespace: 'kube-system' },
    data: { kubelet: 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n' },
  })
  for (const [node, cp] of [
    ['cp-0', true],
    ['w-0', false],
  ] as const) {
    const k8s = path.join(root(node), 'etc/kubernetes')
    await mkdir(path.join(k8s, 'manifests'), { recursive: true })
    await writeFile(path.join(k8s, cp ? 'admin.conf' : 'kubelet.conf'), 'kubeconfig\n')
    if (cp) await writeFile(path.join(k8s, 'kubelet.conf'), 'kubeconfig\n')
    if (cp)
      for (const c of PODS)
        await writeFile(
          path.join(k8s, 'manifests', `${c}.yaml`),
          `apiVersion: v1\nkind: Pod\nmetadata: {name: ${c}}\nspec: {containers: [{name: ${c}, image: 'registry.k8s.io/${c}:${version}'}]}\n`,
        )
    await mkdir(path.join(root(node), 'var/lib/kubelet'), { recursive: true })
    await writeFile(
      path.join(root(node), 'var/lib/kubelet/kubeadm-flags.env'),
      `KUBELET_KUBEADM_ARGS="--hostname-override=${node}"\n`,
    )
    await writeJson(objectFile(api, { resource: 'nodes', name: node }), {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: node, labels: cp ? { 'node-role.kubernetes.io/control-plane': '' } : {} },
      status: { conditions: [{ type: 'Ready', status: cp && opts.cpReady === false ? 'False' : 'True' }] },
    })
  }
  return { dir, api, log: path.join(dir, 'kubeadm.log'), root }
}

function kubeadm(
  w: World,
  args: string[],
  opts: { version?: string; input?: string; env?: NodeJS.ProcessEnv } = {},
) {
  return runProcess(process.execPath, [KUBEADM_FAKE, ...args], {
    env: {
      PATH: process.env.PATH,
      KUBEADM_FAKE_API_DIR: w.api,
      KUBEADM_FAKE_LOG: w.log,
      KUBEADM_FAKE_VERSION: opts.version ?? 'v1.32.9',
      ...opts.env,
    },
    input: opts.input,
  })
}

const adminConf = (w: World, node = 'cp-0') => path.join(w.root(node), 'etc/kubernetes/admin.conf')
const clusterVersion = async (w: World) =>
  (
    parse(
      (
        JSON.parse(await readFile(cmFile(w.api, 'kubeadm-config'), 'utf8')) as {
          data: { ClusterConfiguration: string }
        }
      ).data.ClusterConfiguration,
    ) as { kubernetesVersion: string }
  ).kubernetesVersion
const image = async (w: World, node: string, c: string) =>
  (
    parse(await readFile(path.join(w.root(node), 'etc/kubernetes/manifests', `${c}.yaml`), 'utf8')) as {
      spec: { containers: { image: string }[] }
    }
  ).spec.containers[0]?.image
const logLines = async (w: World) =>
  (await readFile(w.log, 'utf8'))
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as { command: string; node?: string; ok: boolean; target?: string; error?: string },
    )

describe('kubeadm fake: upgrade plan, apply and node (as kubeadm documents them)', function () {
  this.timeout(20_000)
  let tmp: TempDir
  let w: World
  beforeEach(async () => {
    tmp = await makeTempDir()
    w = await makeWorld(tmp.dir)
  })
  afterEach(() => tmp.cleanup())

  describe('upgrade apply', () => {
    it('upgrades the static pods, kubeadm-config, kubelet-config and the kubelet config file, and logs the call', async () => {
      const patches = path.join(tmp.dir, 'patches')
      await mkdir(patches)
      const pinned = 'registry.k8s.io/kube-apiserver:v1.32.9@sha256:' + 'a'.repeat(64)
      await writeFile(
        path.join(patches, 'kube-apiserver+json.json'),
        JSON.stringify([{ op: 'replace', path: '/spec/containers/0/image', value: pinned }]),
      )
      const r = await kubeadm(w, [
        'upgrade',
        'apply',
        'v1.32.9',
        '--yes',
        '--kubeconfig',
        adminConf(w),
        '--patches',
        patches,
      ])
      expect(r.stderr).to.equal('')
      expect(r.code).to.equal(0)
      expect(r.stdout).to.include(
        '[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "v1.32.9"',
      )
      expect(await clusterVersion(w)).to.equal('v1.32.9')
      expect(await image(w, 'cp-0', 'kube-apiserver')).to.equal(pinned)
      expect(await image(w, 'cp-0', 'kube-scheduler')).to.equal('registry.k8s.io/kube-scheduler:v1.32.9')
      expect(await readFile(path.join(w.root('cp-0'), 'var/lib/kubelet/config.yaml'), 'utf8')).to.include(
        'KubeletConfiguration',
      )
      expect(await logLines(w)).to.deep.include.members([
        { ...(await logLines(w))[0], command: 'upgrade apply', node: 'cp-0', ok: true, target: 'v1.32.9' },
      ])
    })

    it('takes --certificate-renewal=false and -y, and a second apply of the same version', async () => {
      const args = [
        'upgrade',
        'apply',
        'v1.32.9',
        '-y',
        '--certificate-renewal=false',
        '--kubeconfig',
        adminConf(w),
      ]
      expect((await kubeadm(w, args)).code).to.equal(0)
      const again = await kubeadm(w, args)
      expect(again.stderr).to.equal('')
      expect(again.code).to.equal(0)
    })

    it('takes an UpgradeConfiguration (v1beta4) with --config', async () => {
      const file = path.join(tmp.dir, 'upgrade.yaml')
      await writeFile(
        file,
        'apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\napply:\n  kubernetesVersion: v1.32.9\n  certificateRenewal: false\n',
      )
      const r = await kubeadm(w, [
        'upgrade',
        'apply',
        '--yes',
        '--config',
        file,
        '--kubeconfig',
        adminConf(w),
      ])
      expect(r.stderr).to.equal('')
      expect(await clusterVersion(w)).to.equal('v1.32.9')
    })

    const refusals: Record<
      string,
      {
        args: string[]
        version?: string
        world?: { version?: string; cpReady?: boolean }
        input?: string
        want: RegExp
      }
    > = {
      'no answer to the confirmation (no --yes)': {
        args: ['v1.32.9'],
        want: /won't proceed; the user didn't answer/,
      },
      'a minor skipped': {
        args: ['v1.33.1', '--yes'],
        version: 'v1.33.1',
        want: /can upgrade only 1 minor version at a time/,
      },
      'a minor downgrade': {
        args: ['v1.31.13', '--yes'],
        version: 'v1.32.9',
        world: { version: 'v1.32.9' },
        want: /downgrad/,
      },
      'a patch downgrade without --force': {
        args: ['v1.31.12', '--yes'],
        version: 'v1.31.13',
        want: /only --force downgrades a patch release/,
      },
      'a kubeadm older than the target minor': {
        args: ['v1.32.9', '--yes'],
        version: 'v1.31.13',
        want: /higher than the kubeadm minor release \(32 > 31\)/,
      },
      'a kubeadm older than the target patch': {
        args: ['v1.32.9', '--yes'],
        version: 'v1.32.8',
        want: /Upgrade kubeadm first/,
      },
      'a version that is none': { args: ['1.32', '--yes'], want: /couldn't parse version "1.32"/ },
      'no version': { args: ['--yes'], want: /Required arguments: \[version\]/ },
      'an unknown flag': { args: ['v1.32.9', '--yes', '--wait'], want: /unknown flag: --wait/ },
      "upgrade node's flag": {
        args: ['v1.32.9', '--yes', '--skip-phases', 'preflight'],
        want: /unknown flag: --skip-phases/,
      },
      'a boolean flag with a separate value': {
        args: ['v1.32.9', '--yes', '--certificate-renewal', 'false'],
        want: /unknown command "false"/,
      },
      'a boolean flag with a bad value': {
        args: ['v1.32.9', '--yes=maybe'],
        want: /invalid argument "maybe" for "--yes" flag/,
      },
      'a NotReady control plane': {
        args: ['v1.32.9', '--yes'],
        world: { cpReady: false },
        want: /\[ERROR ControlPlaneNodesReady\]: there are NotReady control-planes in the cluster: \[cp-0\]/,
      },
    }
    for (const [name, tc] of Object.entries(refusals))
      it(`refuses ${name}, changing nothing`, async () => {
        if (tc.world) w = await makeWorld(path.join(tmp.dir, 'w2'), tc.world.version, tc.world)
        const before = await clusterVersion(w)
        const r = await kubeadm(w, ['upgrade', 'apply', ...tc.args, '--kubeconfig', adminConf(w)], {
          version: tc.version,
          input: tc.input,
        })
        expect(r.code).to.equal(1)
        expect(r.stderr).to.match(tc.want)
        expect(await clusterVersion(w)).to.equal(before)
        expect(await image(w, 'cp-0', 'kube-apiserver')).to.equal(`registry.k8s.io/kube-apiserver:${before}`)
        expect((await logLines(w)).at(-1)).to.include({ command: 'upgrade apply', ok: false })
      })

    it('passes a NotReady control plane with --ignore-preflight-errors', async () => {
      w = await makeWorld(path.join(tmp.dir, 'w2'), 'v1.31.13', { cpReady: false })
      const r = await kubeadm(w, [
        'upgrade',
        'apply',
        'v1.32.9',
        '--yes',
        '--ignore-preflight-errors=ControlPlaneNodesReady',
        '--kubeconfig',
        adminConf(w),
      ])
      expect(r.code).to.equal(0)
      expect(r.stdout).to.include('[WARNING ControlPlaneNodesReady]')
    })

    it('goes on with a "y" on stdin, and with --force (a patch downgrade)', async () => {
      expect(
        (
          await kubeadm(w, ['upgrade', 'apply', 'v1.31.13', '--kubeconfig', adminConf(w)], {
            version: 'v1.31.13',
            input: 'y\n',
          })
        ).code,
      ).to.equal(0)
      const r = await kubeadm(w, ['upgrade', 'apply', 'v1.31.12', '--force', '--kubeconfig', adminConf(w)], {
        version: 'v1.31.13',
      })
      expect(r.stderr).to.equal('')
      expect(await clusterVersion(w)).to.equal('v1.31.12')
    })

    it('refuses --config mixed with a flag it has a field for', async () => {
      const file = path.join(tmp.dir, 'upgrade.yaml')
      await writeFile(file, 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n')
      const r = await kubeadm(w, [
        'upgrade',
        'apply',
        'v1.32.9',
        '--config',
        file,
        '--force',
        '--kubeconfig',
        adminConf(w),
      ])
      expect(r.stderr).to.include("can not mix '--config' with arguments [force]")
    })

    it('refuses a worker (no admin.conf)', async () => {
      const r = await kubeadm(w, [
        'upgrade',
        'apply',
        'v1.32.9',
        '--yes',
        '--kubeconfig',
        adminConf(w, 'w-0'),
      ])
      expect(r.stderr).to.match(/failed to load admin kubeconfig/)
    })
  })

  describe('upgrade plan', () => {
    it('prints the plan and the apply command, changing nothing', async () => {
      const r = await kubeadm(w, ['upgrade', 'plan', 'v1.32.9', '--kubeconfig', adminConf(w)])
      expect(r.stderr).to.equal('')
      expect(r.stdout).to.include('kubeadm upgrade apply v1.32.9')
      expect(await clusterVersion(w)).to.equal('v1.31.13')
    })
    it('refuses what apply would refuse (a skipped minor)', async () => {
      const r = await kubeadm(w, ['upgrade', 'plan', 'v1.33.1', '--kubeconfig', adminConf(w)], {
        version: 'v1.33.1',
      })
      expect(r.stderr).to.match(/only 1 minor version at a time/)
    })
  })

  describe('upgrade node', () => {
    beforeEach(async () => {
      expect(
        (await kubeadm(w, ['upgrade', 'apply', 'v1.32.9', '--yes', '--kubeconfig', adminConf(w)])).code,
      ).to.equal(0)
    })

    it("upgrades a worker's kubelet configuration through kubelet.conf (no admin.conf there)", async () => {
      const kubeletConf = path.join(w.root('w-0'), 'etc/kubernetes/kubelet.conf')
      const r = await kubeadm(w, ['upgrade', 'node', '--kubeconfig', kubeletConf])
      expect(r.stderr).to.equal('')
      expect(r.stdout).to.include('Skipping phase. Not a control plane node')
      expect(await readFile(path.join(w.root('w-0'), 'var/lib/kubelet/config.yaml'), 'utf8')).to.include(
        'KubeletConfiguration',
      )
      expect((await logLines(w)).map((l) => `${l.command} ${l.node ?? ''}`)).to.deep.equal([
        'upgrade apply cp-0',
        'upgrade node w-0',
      ])
    })

    it("upgrades another control plane's static pods to the cluster's version", async () => {
      const other = await makeWorld(path.join(tmp.dir, 'cp1'), 'v1.31.13')
      // cp-0 of `other` shares the API dir of `w`
      const r = await kubeadm(w, [
        'upgrade',
        'node',
        '--kubeconfig',
        adminConf(other),
        '--certificate-renewal=false',
      ])
      expect(r.stderr).to.equal('')
      expect(await image(other, 'cp-0', 'kube-controller-manager')).to.equal(
        'registry.k8s.io/kube-controller-manager:v1.32.9',
      )
    })

    it('refuses a version argument, unknown phases, and a kubeadm older than the cluster', async () => {
      const conf = path.join(w.root('w-0'), 'etc/kubernetes/kubelet.conf')
      expect((await kubeadm(w, ['upgrade', 'node', 'v1.32.9', '--kubeconfig', conf])).stderr).to.include(
        'unknown command "v1.32.9" for "kubeadm upgrade node"',
      )
      expect(
        (await kubeadm(w, ['upgrade', 'node', '--skip-phases', 'nope', '--kubeconfig', conf])).stderr,
      ).to.include('invalid phase name: nope')
      expect((await kubeadm(w, ['upgrade', 'node', '--yes', '--kubeconfig', conf])).stderr).to.include(
        'unknown flag: --yes',
      )
      expect(
        (await kubeadm(w, ['upgrade', 'node', '--kubeconfig', conf], { version: 'v1.31.13' })).stderr,
      ).to.include('upgrade kubeadm on this node first')
    })
  })

  describe('the simulator reports the new versions', () => {
    it("the API fake's /version is the recorded ClusterConfiguration's version", () => {
      expect(versionInfo('v1.32.9')).to.include({ gitVersion: 'v1.32.9', major: '1', minor: '32' })
      expect(versionInfo(undefined).gitVersion).to.equal('v1.31.13')
      expect(versionInfo('garbage').gitVersion).to.equal('v1.31.13')
    })

    it('the kubelet stand-in answers --version with its KUBELET_FAKE_VERSION, as an installed kubelet binary', async () => {
      const standIn = path.join(path.dirname(simulatorPaths(REPO_ROOT).kubeletUnit), 'kubelet')
      const launcher = path.join(tmp.dir, 'kubelet')
      await writeFile(
        launcher,
        `#!/bin/sh\nKUBELET_FAKE_VERSION=v1.32.9 exec '${process.execPath}' '${standIn}' "$@"\n`,
      )
      await chmod(launcher, 0o755)
      const r = await runProcess(launcher, ['--version'])
      expect(r.stdout.trim()).to.equal('Kubernetes v1.32.9')
    })
  })
})

describe('simulatedComponents: the simulator’s kubeadm and kubelet of a version', () => {
  it('are launchers that know their version, hash-pinned as the installer requires', async () => {
    const tmp = await makeTempDir()
    try {
      const paths = simulatorPaths(REPO_ROOT)
      const components = simulatedComponents('v1.32.9', {
        nodeBinary: process.execPath,
        kubeadmFake: paths.kubeadmFake,
        kubeletUnit: paths.kubeletUnit,
      })
      expect(components.map((c) => c.installPath)).to.deep.equal([
        '/run/state/bin/kubeadm',
        '/run/state/bin/kubelet',
      ])
      for (const [i, c] of components.entries()) {
        const bytes = Buffer.from(c.url.slice(c.url.indexOf(',') + 1), 'base64')
        expect(c.hash).to.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`)
        const file = path.join(tmp.dir, `c${i}`)
        await writeFile(file, bytes, { mode: 0o755 })
        const r = await runProcess(file, i === 0 ? ['version', '-o', 'short'] : ['--version'])
        expect(r.stdout.trim()).to.equal(i === 0 ? 'v1.32.9' : 'Kubernetes v1.32.9')
      }
      expect(() =>
        simulatedComponents('1.32', { nodeBinary: '', kubeadmFake: '', kubeletUnit: '' }),
      ).to.throw(/not a version/)
    } finally {
      await tmp.cleanup()
    }
  })
})
