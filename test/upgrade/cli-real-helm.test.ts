/**
 * `constellation upgrade execute --helm` as operators run it, with the REAL helm 3.17.3 and 4.1.4
 * on PATH and the FakeApiServer TEST DOUBLE as the cluster: the path on which every helm 4 upgrade
 * once failed while the suite, on the helm contract fake, stayed green. The releases are installed
 * first with the same real helm; a failure is the API refusing a write, as a real cluster can.
 */
import { spawn } from 'node:child_process'
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRunner } from '../../src/lib/system/index.js'
import { Helm } from '../../src/lib/helm/binary/helm.js'
import { expect } from '../support/chai.js'
import { CLI_ARGS, REPO_ROOT, runCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { HELM_MAJORS, realHelmEnv } from '../support/helm.js'
import { makeTempDir } from '../support/temp.js'
import {
  COREDNS_DEPLOYMENT,
  installFixtureReleases,
  makeUpgradeWorkspace,
} from '../support/upgrade-workspace.js'

const RELEASES = ['cilium', 'coredns', 'cert-manager']

interface PlanJson {
  releases: Array<{
    name: string
    namespace: string
    installed: string | null
    target: string
    valueChanges: { added: string[]; changed: string[] } | null
  }>
}

describe('constellation upgrade execute --helm (CLI) on the real helm 3 and 4', function () {
  this.timeout(180_000)
  let api: FakeApiServer
  let tmp: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => {
    api = await new FakeApiServer().start()
    tmp = await makeTempDir()
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  /**
   * A workspace targeting 1.1.0, its releases installed at 1.0.0 by `helm` (in `namespaces`, with
   * `values` set on them), and PATH with that helm first.
   */
  async function cluster(
    major: 3 | 4,
    opts: { namespaces?: Record<string, string>; values?: Record<string, string>; only?: string[] } = {},
  ) {
    const ws = await makeUpgradeWorkspace(
      path.join(tmp.dir, 'ws'),
      Object.fromEntries(RELEASES.map((r) => [r, '1.1.0'])),
      api,
    )
    const env = await realHelmEnv(tmp.dir, major)
    const kubeconfig = path.join(tmp.dir, 'kubeconfig')
    await writeFile(kubeconfig, api.kubeconfig(), { mode: 0o600 })
    const helm = await Helm.detect({ runner: createRunner(), binary: 'helm', env, kubeconfig })
    const versions = Object.fromEntries((opts.only ?? RELEASES).map((name) => [name, '1.0.0']))
    await installFixtureReleases(helm, versions, opts)
    const installed = async () =>
      Object.fromEntries((await helm.listReleases()).map((r) => [r.name, `${r.version} ${r.status}`]))
    return { ws, env, helm, kubeconfig, installed }
  }

  for (const major of HELM_MAJORS) {
    it(`helm ${major}: backs up, then upgrades every release; values set on a release survive`, async () => {
      const { ws, env, helm, installed } = await cluster(major, {
        values: { coredns: 'replicaCount: 2\nservice:\n  clusterIP: 10.96.0.99\n' },
      })
      const r = await runCli(
        ['upgrade', 'execute', '--helm', '--yes', '--json', '-C', ws, '--helm-timeout', '2m'],
        { env },
      )
      expect(r.code, r.stderr).to.equal(0)
      const report = JSON.parse(r.stdout) as {
        backupDir: string
        releases: Array<{ name: string; outcome: string }>
      }
      expect(report.releases.map((x) => [x.name, x.outcome])).to.deep.equal(
        RELEASES.map((n) => [n, 'upgraded']),
      )
      expect(await installed()).to.deep.equal(Object.fromEntries(RELEASES.map((n) => [n, '1.1.0 deployed'])))
      // the chart's CRD, backed up through the same API before anything changed
      expect(await readdir(path.join(report.backupDir, 'backups', 'crds'))).to.include(
        'certificates.fixture.constellation.invalid.yaml',
      )
      // the operator's replicaCount is kept; the cluster DNS address is the cluster's again
      expect(await helm.userValues('coredns', 'kube-system')).to.deep.equal({
        replicaCount: 2,
        service: { clusterIP: '10.96.0.10' },
      })
    })

    it(`helm ${major}: needs no workspace config: the cluster says its version, network and release namespaces`, async () => {
      const { env, kubeconfig } = await cluster(major, {
        only: ['cilium', 'coredns'],
        namespaces: { cilium: 'networking' },
        values: { cilium: 'hubble:\n  enabled: true\n', coredns: 'service:\n  clusterIP: 10.96.0.10\n' },
      })
      // what kubeadm init stores: the service network the cluster DNS address comes from
      api.put('v1', 'configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
        data: {
          ClusterConfiguration:
            'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: 10.0.0.9:6443\nnetworking:\n  serviceSubnet: 10.100.0.0/16\n',
        },
      })
      const empty = path.join(tmp.dir, 'no-workspace')
      await mkdir(empty)
      for (const command of [['check'], ['execute', '--helm', '--dry-run']]) {
        const r = await runCli(
          ['upgrade', ...command, '--force', '--json', '-C', empty, '--kubeconfig', kubeconfig],
          { env },
        )
        expect(r.code, r.stderr).to.equal(0)
        const json = JSON.parse(r.stdout) as PlanJson | { plan: PlanJson }
        const plan = 'plan' in json ? json.plan : json
        // the API server says v1.31.13: the pinned v1.31 release set is the target
        expect(plan.releases.map((x) => [x.name, x.namespace, x.installed, x.target])).to.deep.equal([
          ['cilium', 'networking', '1.0.0', '1.17.4'],
          ['coredns', 'kube-system', '1.0.0', '1.37.3'],
          ['cert-manager', 'cert-manager', null, 'v1.17.2'],
        ])
        const changes = Object.fromEntries(plan.releases.map((x) => [x.name, x.valueChanges]))
        expect(changes).to.deep.equal({
          cilium: {
            added: ['kubeProxyReplacement', 'encryption', 'k8sServiceHost', 'k8sServicePort'],
            changed: [],
          },
          coredns: { added: [], changed: ['service.clusterIP'] },
          'cert-manager': { added: ['crds'], changed: [] },
        })
      }
      const text = await runCli(['upgrade', 'check', '--force', '-C', empty, '--kubeconfig', kubeconfig], {
        env,
      })
      expect(text.stdout).to.match(/coredns: changes service\.clusterIP/)
      expect(text.stdout).to.not.match(/10\.100\.0\.10/)
    })

    it(`helm ${major}: Ctrl-C while helm waits for a workload: exit 130, what changed, the backup folder`, async () => {
      const { ws, env, installed } = await cluster(major)
      const coredns = COREDNS_DEPLOYMENT
      api.keepUnready(coredns)
      const cli = spawn(process.execPath, [...CLI_ARGS, 'upgrade', 'execute', '--helm', '--yes', '-C', ws], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...env, CONSTELL_NO_SPINNER: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stderr = ''
      cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
      const done = new Promise<number | null>((resolve) => cli.on('close', resolve))
      try {
        // helm has written coredns's new revision and now waits for its Deployment
        await eventually('helm to wait for coredns', async () =>
          api.get('v1', 'secrets', 'sh.helm.release.v1.coredns.v2', 'kube-system'),
        )
        cli.kill('SIGINT')
        expect(await done, stderr).to.equal(130)
        expect(stderr).to.match(/cilium: upgraded \(1\.0\.0 → 1\.1\.0\)/)
        expect(stderr).to.match(/coredns: in progress: .*helm status coredns -n kube-system/)
        expect(stderr).to.match(/cert-manager: not touched/)
        const folder = /Backup folder: (\S+)/.exec(stderr)?.[1] ?? ''
        expect(await readdir(path.join(folder, 'backups', 'crds'))).to.not.be.empty
      } finally {
        cli.kill('SIGKILL')
        await done
        // the helm it left finishes once coredns is ready, as on a cluster that catches up
        api.makeReady(coredns)
        await eventually('the helm the CLI left to finish', async () =>
          (await installed()).coredns === '1.1.0 deployed' ? true : undefined,
        )
      }
    })

    it(`helm ${major}: a release the cluster refuses to change is rolled back by helm, and the report says so`, async () => {
      const { ws, env, installed } = await cluster(major)
      api.failOn({ method: 'PATCH', pathIncludes: 'configmaps/coredns-settings', status: 500 })
      const r = await runCli(
        ['upgrade', 'execute', '--helm', '--yes', '--json', '-C', ws, '--helm-timeout', '2m'],
        { env },
      )
      expect(r.code, r.stderr).to.equal(1)
      const report = JSON.parse(r.stdout) as { releases: Array<{ name: string; outcome: string }> }
      expect(report.releases.map((x) => [x.name, x.outcome])).to.deep.equal([
        ['cilium', 'upgraded'],
        ['coredns', 'rolled-back'],
        ['cert-manager', 'not-touched'],
      ])
      expect(await installed()).to.deep.equal({
        cilium: '1.1.0 deployed',
        coredns: '1.0.0 deployed',
        'cert-manager': '1.0.0 deployed',
      })
    })
  }
})
