/**
 * `mini up --merge-kubeconfig` puts the cluster into the user's kubeconfig beside what is there, as
 * kind and minikube do; `mini down` takes out exactly what it put in. The workspace is one `mini up`
 * would leave (config, state with a cluster ID, admin kubeconfig, record); nothing boots.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { generateWorkspace, loadState } from '../../src/lib/config/index.js'
import { mergeMiniKubeconfig } from '../../src/lib/mini/index.js'
import { readMiniRecord, writeMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { writeFileAtomic } from '../../src/lib/system/index.js'
import { parseYaml, stringifyYaml } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const ADMIN_CONF = `apiVersion: v1
kind: Config
clusters: [{ name: mini, cluster: { server: "https://127.99.1.2:6443", certificate-authority-data: Q0E= } }]
users: [{ name: kubernetes-admin, user: { client-certificate-data: Q0VSVA==, client-key-data: S0VZ } }]
contexts: [{ name: kubernetes-admin@mini, context: { cluster: mini, user: kubernetes-admin } }]
current-context: kubernetes-admin@mini
`
const THEIRS = `apiVersion: v1
kind: Config
clusters: [{ name: work, cluster: { server: "https://work.example:6443" } }]
users: [{ name: me, user: { token: abc } }]
contexts: [{ name: work, context: { cluster: work, user: me } }]
current-context: work
preferences: {}
`

interface Kubeconfig {
  clusters?: Array<{ name: string }>
  users?: Array<{ name: string }>
  contexts?: Array<{ name: string }>
  'current-context'?: string
}
const names = (doc: Kubeconfig) => ({
  clusters: (doc.clusters ?? []).map((e) => e.name),
  users: (doc.users ?? []).map((e) => e.name),
  contexts: (doc.contexts ?? []).map((e) => e.name),
  current: doc['current-context'],
})
const read = async (file: string) => parseYaml(await readFile(file, 'utf8'), file).value as Kubeconfig

/** A workspace as a finished `mini up` leaves it. */
async function initializedMiniWorkspace(ws: string): Promise<string> {
  await generateWorkspace({
    workspace: ws,
    provider: 'qemu',
    kubernetes: 'v1.31',
    variant: 'qemu-vtpm',
    name: 'mini',
    endpoint: '127.99.1.2',
  })
  const files = workspacePaths(ws)
  const state = await loadState(files.state)
  state.clusterValues.clusterID = 'ab12cd34'.padEnd(64, '0')
  await writeFileAtomic(files.state, stringifyYaml(state), 0o600)
  await writeFile(files.adminConf, ADMIN_CONF, { mode: 0o600 })
  await writeFile(files.masterSecret, '{}', { mode: 0o600 })
  const record: MiniRecord = {
    version: 1,
    startedAt: new Date().toISOString(),
    network: { mode: 'loopback', id: randomBytes(3).toString('hex'), prefix: '127.99.1' },
    createdFiles: [files.config, files.state, files.masterSecret, files.adminConf],
    createdWorkspace: true,
    nodes: [],
  }
  await writeMiniRecord(ws, record)
  return ws
}

describe('mini and the user kubeconfig', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let kubeconfig: string
  beforeEach(async () => {
    tmp = await makeTempDir()
    kubeconfig = path.join(tmp.dir, 'home/.kube/config')
    await mkdir(path.dirname(kubeconfig), { recursive: true })
    await writeFile(kubeconfig, THEIRS, { mode: 0o600 })
  })
  afterEach(async () => tmp.cleanup())

  it('merges the cluster beside the entries there, current, and mini down takes out only what it merged', async () => {
    const ws = await initializedMiniWorkspace(path.join(tmp.dir, 'ws'))
    const merged = await mergeMiniKubeconfig(ws, { KUBECONFIG: kubeconfig })
    expect(merged).to.deep.equal({ file: kubeconfig, context: 'mini-ab12cd34' })
    expect(names(await read(kubeconfig))).to.deep.equal({
      clusters: ['work', 'mini-ab12cd34'],
      users: ['me', 'mini-ab12cd34-admin'],
      contexts: ['work', 'mini-ab12cd34'],
      current: 'mini-ab12cd34',
    })
    expect((await readMiniRecord(ws))?.mergedKubeconfig).to.deep.equal({
      file: kubeconfig,
      cluster: 'mini-ab12cd34',
      user: 'mini-ab12cd34-admin',
      context: 'mini-ab12cd34',
    })

    const down = await runCli(['mini', 'down', '-C', ws], { env: { KUBECONFIG: kubeconfig } })
    expect(down.code, down.stderr).to.equal(0)
    expect(down.stdout).to.contain(`context mini-ab12cd34 in ${kubeconfig}`)
    const after = await read(kubeconfig)
    // the user's own entries as they were; no current context pointing at a cluster that is gone
    expect(names(after)).to.deep.equal({
      clusters: ['work'],
      users: ['me'],
      contexts: ['work'],
      current: undefined,
    })
    expect(after).to.deep.include({ preferences: {} })
  })

  it('mini up --merge-kubeconfig is offered, and says what it does', async () => {
    const help = await runCli(['mini', 'up', '--help'])
    expect(help.stdout).to.match(
      /--merge-kubeconfig\s+merge the cluster's admin kubeconfig into ~\/\.kube\/config/,
    )
  })
})
