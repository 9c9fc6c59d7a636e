/**
 * `constellation upgrade execute --helm` as operators run it, with the REAL helm 3.17.3 and 4.1.4
 * on PATH and the FakeApiServer TEST DOUBLE as the cluster: the path on which every helm 4 upgrade
 * once failed while the suite, on the helm contract fake, stayed green. The releases are installed
 * first with the same real helm; a failure is the API refusing a write, as a real cluster can.
 */
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRunner } from '../../src/lib/system/index.js'
import { Helm } from '../../src/lib/upgrade/helm.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { FakeApiServer } from '../support/fake-apiserver.js'
import { FIXTURE_CHARTS, HELM_MAJORS, realHelm } from '../support/helm.js'
import { makeTempDir } from '../support/temp.js'
import { makeUpgradeWorkspace, RELEASE_NAMESPACES } from '../support/upgrade-workspace.js'

const RELEASES = ['cilium', 'coredns', 'cert-manager']

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

  /** A workspace targeting 1.1.0, its releases installed at 1.0.0 by `helm`, and PATH with that helm first. */
  async function cluster(major: 3 | 4) {
    const ws = await makeUpgradeWorkspace(
      path.join(tmp.dir, 'ws'),
      Object.fromEntries(RELEASES.map((r) => [r, '1.1.0'])),
      api,
    )
    const bin = path.join(tmp.dir, 'bin')
    const home = path.join(tmp.dir, 'home')
    await mkdir(bin)
    await mkdir(home)
    await symlink(await realHelm(major), path.join(bin, 'helm'))
    const env = {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      HOME: home,
      XDG_CACHE_HOME: home,
      XDG_CONFIG_HOME: home,
    }
    const kubeconfig = path.join(tmp.dir, 'kubeconfig')
    await writeFile(kubeconfig, api.kubeconfig(), { mode: 0o600 })
    const helm = await Helm.detect({ runner: createRunner(), binary: 'helm', env, kubeconfig })
    const values = path.join(tmp.dir, 'values.yaml')
    await writeFile(values, '{}\n')
    for (const name of RELEASES)
      await helm.upgrade(
        {
          name,
          chart: path.join(FIXTURE_CHARTS, name, '1.0.0'),
          version: '1.0.0',
          namespace: RELEASE_NAMESPACES[name] ?? 'default',
        },
        values,
        '60s',
      )
    const installed = async () =>
      Object.fromEntries((await helm.listReleases()).map((r) => [r.name, `${r.version} ${r.status}`]))
    return { ws, env, installed }
  }

  for (const major of HELM_MAJORS) {
    it(`helm ${major}: backs up, then upgrades every release`, async () => {
      const { ws, env, installed } = await cluster(major)
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
