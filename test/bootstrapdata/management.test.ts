/**
 * `bootstrap-data generate --kubeconfig <management cluster>` as the built CLI: the CAs live in the
 * Cluster's CAPI Secrets there, and join tokens go to the workload cluster named by its
 * `<cluster>-kubeconfig` Secret. Both clusters are Kubernetes API contract fakes (TEST DOUBLES).
 */
import { readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { fixtureText } from './helpers.js'

describe('bootstrap-data generate against a management cluster (built CLI)', function () {
  this.timeout(60_000)
  let management: FakeApiServer
  let workload: FakeApiServer
  let tmp: TempDir
  let kubeconfig: string

  beforeEach(async () => {
    ;[management, workload, tmp] = await Promise.all([
      startFakeApiServer(),
      startFakeApiServer(),
      makeTempDir('constell-mgmt-'),
    ])
    kubeconfig = path.join(tmp.dir, 'management.kubeconfig')
    await writeFile(kubeconfig, management.kubeconfig(), { mode: 0o600 })
    await writeFile(path.join(tmp.dir, 'init.yaml'), await fixtureText())
    await writeFile(path.join(tmp.dir, 'ready.yaml'), await fixtureText(true))
  })
  afterEach(async () => {
    await Promise.all([management.stop(), workload.stop()])
    await tmp.cleanup()
  })

  const generate = (input: string, out: string, ...extra: string[]) =>
    runCli([
      'bootstrap-data',
      'generate',
      '-f',
      path.join(tmp.dir, input),
      '-C',
      tmp.dir,
      '-o',
      path.join(tmp.dir, out) + '/',
      '--kubeconfig',
      kubeconfig,
      '--json',
      ...extra,
    ])

  it('init creates the CA Secrets there; join registers its token through <cluster>-kubeconfig', async () => {
    const init = await generate('init.yaml', 'init')
    expect(init.code, init.stderr).to.equal(0)
    const secrets = management.list('v1', 'secrets', 'default').map((s) => s.metadata.name)
    expect(secrets.sort()).to.deep.equal(['demo-ca', 'demo-etcd', 'demo-proxy', 'demo-sa'])
    expect(await readdir(tmp.dir), 'no local CA directory').to.not.include('pki')

    management.put('v1', 'secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'demo-kubeconfig', namespace: 'default' },
      data: { value: Buffer.from(workload.kubeconfig()).toString('base64') },
    })
    const join = await generate('ready.yaml', 'join', '--machine', 'worker-0')
    expect(join.code, join.stderr).to.equal(0)
    const result = JSON.parse(join.stdout) as { tokenSecret: { name: string; registered: boolean } }
    expect(result.tokenSecret.registered).to.equal(true)
    expect(workload.get('v1', 'secrets', result.tokenSecret.name, 'kube-system')).to.not.equal(undefined)
    expect(await readdir(path.join(tmp.dir, 'join'))).to.deep.equal(['worker-0.cloud-config'])
  })

  it('join without the CA Secrets is refused naming them; --ca-dir with --kubeconfig is a usage error', async () => {
    const join = await generate('ready.yaml', 'join', '--machine', 'worker-0')
    expect(join.code).to.equal(1)
    expect(join.stdout + join.stderr).to.include('default/demo-ca')
    expect(workload.list('v1', 'secrets', 'kube-system')).to.deep.equal([])
    const both = await generate('init.yaml', 'x', '--ca-dir', path.join(tmp.dir, 'pki'))
    expect(both.code).to.equal(2)
    expect(both.stdout + both.stderr).to.match(/--ca-dir.*--kubeconfig|--kubeconfig.*--ca-dir/)
  })
})
