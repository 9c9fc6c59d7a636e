/**
 * `constellation init` cut off after the node took its lock, end to end and as processes: the
 * operator's Ctrl-C while the node runs kubeadm, then `init` run again in the same workspace, which
 * resumes and writes the kubeconfig; another workspace's `init` gets nothing. The node is
 * `constellation bootstrap run` with its own swtpm and LUKS2 image, the real key and join services
 * start from the project's systemd units once the answer was handed over; Kubernetes is the
 * contract fakes of DESIGN §4 (see test/support/test-cluster.ts).
 *
 * Slow (about 5–10 s each on 2 cores): each case builds its own node (swtpm, LUKS2 re-keying
 * under cryptsetup), runs three or four CLI processes, each with its own attested handshake on the
 * swtpm, and waits for the key and join services to start after the resume.
 */
import { cp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { encodeMasterSecret, generateMasterSecret } from '../../src/lib/kms/index.js'
import { nodePaths, workspacePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli, type CliResult } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import type { KubeadmHold } from '../support/local-node.js'
import { runCliOnTerminal } from '../support/terminal.js'
import { pcr15, startTestCluster, type ClusterNode, type TestCluster } from '../support/test-cluster.js'

const fileMode = (file: string) =>
  stat(file).then(
    (s) => s.mode & 0o777,
    () => undefined,
  )

/** What the operator sees in a workspace, to show a refused run changed none of it. */
async function workspaceFiles(dir: string): Promise<Record<string, string | undefined>> {
  const ws = workspacePaths(dir)
  const read = (file: string) => readFile(file, 'utf8').catch(() => undefined)
  return {
    state: await read(ws.state),
    masterSecret: await read(ws.masterSecret),
    adminConf: await read(ws.adminConf),
    clusterLog: await read(ws.clusterLog),
  }
}

/** The interrupted run's state line(s) on stderr, for both signals and both entries. */
function expectMayBeInitialized(res: CliResult | { output: string }, workspace: string): void {
  const text = 'output' in res ? res.output.replace(/\r?\n/g, ' ').replace(/\s+/g, ' ') : res.stderr
  const ws = workspacePaths(workspace)
  expect(text).to.include('the node may be initialized')
  expect(text).to.include(ws.masterSecret)
  expect(text).to.include(`constellation init -C ${workspace}`)
  expect(text).to.include('resumes')
  expect(text).to.not.include('nothing was sent')
  expect(text).to.not.include('spent')
}

describe('init cut off after the node lock resumes (CLI processes)', function () {
  this.timeout(180_000)
  let cluster: TestCluster
  let cp0: ClusterNode
  let hold: KubeadmHold | undefined
  beforeEach(async () => {
    cluster = await startTestCluster()
    cp0 = await cluster.addNode({ name: 'cp_0', role: 'control-plane', peers: [] })
    hold = undefined
  })
  afterEach(async () => {
    await hold?.release()
    await cluster.stop()
  })

  it('SIGINT while the node runs kubeadm: exit 130, "may be initialized"; init again resumes and writes the kubeconfig; another workspace gets nothing', async () => {
    const ws = workspacePaths(cp0.local.workspace)
    hold = await cp0.local.holdKubeadm()
    const daemon = await cp0.start()
    const run = spawnCli(['init', '--skip-helm', '-C', cp0.local.workspace])
    await Promise.race([hold.reached(), run.result])
    run.child.kill('SIGINT')
    const cut = await run.result
    expect(cut.code, cut.stderr + cut.stdout).to.equal(130)
    expectMayBeInitialized(cut, cp0.local.workspace)
    expect(await pcr15(cp0), 'the node took its lock').to.not.deep.equal(Buffer.alloc(32))
    expect(await fileMode(ws.masterSecret)).to.equal(0o600)
    expect(await fileMode(ws.adminConf)).to.equal(undefined)

    // kubeadm finishes; its answer has no caller, so the node keeps it and keeps serving
    await hold.release()
    await eventually('the node to keep its answer', () => fileMode(nodePaths(cp0.local.root).initResultFile))

    // another workspace (its own master secret, left by its own cut-off run): nothing is sent to a
    // node whose PCR 15 holds another cluster's ID, and nothing in that workspace changes
    const other = path.join(path.dirname(cp0.local.workspace), 'other-ws')
    await cp(cp0.local.workspace, other, { recursive: true })
    await rm(workspacePaths(other).masterSecret)
    await writeFile(workspacePaths(other).masterSecret, encodeMasterSecret(generateMasterSecret()), {
      mode: 0o600,
    })
    const otherBefore = await workspaceFiles(other)
    const intruder = await runCli(['init', '--skip-helm', '-C', other, '--json'])
    expect(intruder.code, intruder.stderr + intruder.stdout).to.equal(4)
    expect(intruder.stdout)
      .to.match(/PCR 15/)
      .and.match(/another/)
    expect(intruder.stdout).to.include('nothing was sent')
    expect(await workspaceFiles(other)).to.deep.equal(otherBefore)

    // the genuine workspace resumes
    const again = await runCli(['init', '--skip-helm', '-C', cp0.local.workspace, '--json'])
    await daemon.expectInitSucceeded(again)
    const result = JSON.parse(again.stdout) as Record<string, unknown>
    expect(result).to.include({ resumed: true, masterSecretSource: 'reused', kubeconfig: ws.adminConf })
    expect(await fileMode(ws.adminConf)).to.equal(0o600)
    const kubeconfig = parse(await readFile(ws.adminConf, 'utf8')) as { kind: string; clusters: unknown[] }
    expect(kubeconfig).to.include({ kind: 'Config' })
    expect(kubeconfig.clusters).to.have.length(1)
    const state = parse(await readFile(ws.state, 'utf8')) as { clusterValues: { clusterID: string } }
    expect(state.clusterValues.clusterID)
      .to.equal(result.clusterID)
      .and.match(/^[0-9a-f]{64}$/)
    const exited = await daemon.exited
    expect(exited.code, exited.stderr + exited.stdout).to.equal(0)
    expect(await fileMode(nodePaths(cp0.local.root).initResultFile), 'the kept copy is gone').to.equal(
      undefined,
    )
    await cp0.servicesUp()
  })

  it('Ctrl-C on a terminal at "Initializing the cluster" prints the same state line, exit 130; init again resumes', async () => {
    const ws = workspacePaths(cp0.local.workspace)
    hold = await cp0.local.holdKubeadm()
    const daemon = await cp0.start()
    const held = path.join(path.dirname(cp0.local.workspace), 'kubeadm-held')
    const r = await runCliOnTerminal(['init', '--skip-helm', '-C', cp0.local.workspace], process.env, {
      when: () => fileMode(held).then((m) => m !== undefined), // the spinner says "Initializing the cluster"
      keys: '\u0003',
    })
    expect(r.code, r.output).to.equal(130)
    expect(r.output).to.include('Initializing the cluster')
    expectMayBeInitialized(r, cp0.local.workspace)
    await hold.release()
    const again = await runCli(['init', '--skip-helm', '-C', cp0.local.workspace])
    await daemon.expectInitSucceeded(again)
    expect(again.stdout).to.include('resumed')
    expect(await fileMode(ws.adminConf)).to.equal(0o600)
    expect((await daemon.exited).code).to.equal(0)
  })
})
