import { execFile } from 'node:child_process'
import { readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { createRunner } from '../../src/lib/system/index.js'
import { parseYamlDocuments } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { FIXTURE_CHARTS, realHelm } from '../support/helm.js'
import { Helm } from '../../src/lib/helm/binary/helm.js'
import { type ReleaseTarget } from '../../src/lib/helm/releases/releases.js'

const run = promisify(execFile)
const CHARTS = ['cilium', 'coredns', 'cert-manager']
const VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '2.0.0']

// The fixture charts go through the REAL helm (4.x from the npm package), as the issue asks.
describe('fixture charts through the real helm binary', function () {
  this.timeout(120_000)
  let helmPath: string
  let tmp: { dir: string; cleanup: () => Promise<void> }
  before(async () => {
    helmPath = await realHelm()
  })
  beforeEach(async () => {
    tmp = await makeTempDir()
  })
  afterEach(() => tmp.cleanup())

  it('lints every chart at every version', async () => {
    const dirs = CHARTS.flatMap((c) => VERSIONS.map((v) => path.join(FIXTURE_CHARTS, c, v)))
    const { stdout } = await run(helmPath, ['lint', '--strict', ...dirs])
    expect(stdout).to.match(new RegExp(`${dirs.length} chart\\(s\\) linted, 0 chart\\(s\\) failed`))
  })

  it('packages each version into <chart>-<version>.tgz that helm reads back', async () => {
    for (const v of VERSIONS)
      await run(helmPath, ['package', path.join(FIXTURE_CHARTS, 'cert-manager', v), '-d', tmp.dir])
    expect((await readdir(tmp.dir)).sort()).to.deep.equal(VERSIONS.map((v) => `cert-manager-${v}.tgz`))
    const helm = await Helm.detect({ runner: createRunner(), binary: helmPath, env: process.env })
    expect(await helm.localChartVersion(path.join(tmp.dir, 'cert-manager-1.2.0.tgz'))).to.equal('1.2.0')
  })

  it('renders a chart with the computed values and its CRDs, as the backup saves it', async () => {
    const helm = await Helm.detect({ runner: createRunner(), binary: helmPath, env: process.env })
    const values = path.join(tmp.dir, 'overrides.yaml')
    await writeFile(values, 'greeting: from the upgrade\ncrds:\n  enabled: true\n')
    const target: ReleaseTarget = {
      name: 'cert-manager',
      chart: path.join(FIXTURE_CHARTS, 'cert-manager', '2.0.0'),
      version: '2.0.0',
      namespace: 'cert-manager',
      values: {},
      allowMinorJump: true,
    }
    const docs = parseYamlDocuments(await helm.template(target, values), 'rendered.yaml').map(
      (d) => d.value as { kind: string; metadata: { namespace?: string }; data?: Record<string, string> },
    )
    expect(docs.map((d) => d.kind)).to.deep.equal(['CustomResourceDefinition', 'ConfigMap'])
    const cm = docs[1]
    expect(cm?.metadata.namespace).to.equal('cert-manager')
    expect(cm?.data?.greeting).to.equal('from the upgrade')
  })

  it('reports a chart path that does not exist', async () => {
    const helm = await Helm.detect({ runner: createRunner(), binary: helmPath, env: process.env })
    await expect(helm.localChartVersion(path.join(tmp.dir, 'nope'))).to.be.rejectedWith(
      /helm show chart exited with code 1/,
    )
  })
})
