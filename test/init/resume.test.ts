/**
 * Resume over real aTLS: a node (swtpm, LUKS2 image, kubeadm contract fake) whose Init caller went
 * away after the node lock keeps the answer, and hands it to a caller who attests the node and
 * proves the init secret and the master secret, bound to that handshake. The rules in detail, on
 * stub parts: test/bootstrapper/init/init-resume.test.ts.
 */
import { readFile, stat, writeFile } from 'node:fs/promises'
import { status } from '@grpc/grpc-js'
import { APIClient, InitRequest } from '../../src/gen/init.js'
import {
  clusterIdPcrValue,
  CLUSTER_ID_PCR,
  createValidator,
  type ValidationResult,
} from '../../src/lib/attestation/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import { loadConfig, loadState, validatorSettingsForConfig } from '../../src/lib/config/index.js'
import { CliError } from '../../src/lib/errors/index.js'
import { initCluster } from '../../src/lib/init/index.js'
import { recordMeasurementSalt } from '../../src/lib/init/workspace.js'
import {
  clusterKmsUri,
  ClusterKms,
  deriveClusterId,
  deriveResumeKey,
  generateMasterSecret,
  parseClusterKmsUri,
  resumeProof,
  writeMasterSecret,
  type MasterSecret,
} from '../../src/lib/kms/index.js'
import { nodePaths, workspacePaths } from '../../src/lib/paths.js'
import { runStepsSilently, settledWithin } from '../../src/lib/system/index.js'
import { createLogger, silentLogger, type Logger } from '../../src/lib/system/logger.js'
import { expect } from '../support/chai.js'
import { startCuttingProxy } from '../support/cutting-proxy.js'
import { eventually } from '../support/eventually.js'
import {
  attestedClient,
  callInit,
  initRequest,
  pcr15,
  startNode,
  type InitReply,
  type RunningNode,
} from '../support/init-client.js'
import { setClusterEndpoint, startLocalNode, type LocalNode } from '../support/local-node.js'

/** `constellation init` in-process, as flow.test.ts runs it (no releases). */
function init(workspace: string, opts: { log?: Logger; titles?: string[] } = {}) {
  return initCluster(
    {
      workspace,
      conformance: false,
      mergeKubeconfig: false,
      timeout: { text: '30000 ms', ms: 30_000 },
      skipHelm: true,
    },
    {
      progress: (steps) => {
        opts.titles?.push(...steps.map((s) => s.title))
        return runStepsSilently(steps)
      },
      env: {},
      credentials: (_config, handshake) => createAttestedChannelCredentials(handshake),
      log: opts.log ?? silentLogger,
      retryInitialDelayMs: 200,
      printLastResort: () => {},
    },
  )
}

/** Everything init may touch in the workspace, to show a refused run changed none of it. */
async function workspaceFiles(dir: string): Promise<Record<string, string | undefined>> {
  const ws = workspacePaths(dir)
  const read = (file: string) => readFile(file, 'utf8').catch(() => undefined)
  const entries = await Promise.all(
    (['state', 'masterSecret', 'adminConf', 'clusterLog', 'config'] as const).map(
      async (k) => [k, await read(ws[k])] as const,
    ),
  )
  return Object.fromEntries(entries)
}

/** Waits until the node logged that its Init caller went away (it then keeps the answer for a resume). */
function callerGoneSeen(r: RunningNode): Promise<true> {
  return eventually(
    'the node to see its caller gone',
    async () => (await r.logs.collect()).toString().includes('The Init caller went away') || undefined,
    30_000,
  )
}

/** The client side of a resume, as `constellation init` does it: attest first, then prove, bound to that handshake. */
async function resumeOverAtls(
  node: LocalNode,
  address: string,
  request: InitRequest,
  opts: { master?: MasterSecret; bindTo?: (attestedKey: Buffer) => Buffer } = {},
): Promise<InitReply> {
  const config = await loadConfig(workspacePaths(node.workspace).config)
  const { variant, measurements, options } = validatorSettingsForConfig(config)
  const master = parseClusterKmsUri(request.kmsUri)
  const clusterId = deriveClusterId(
    new ClusterKms(master.key, master.salt).measurementSecret(),
    request.measurementSalt,
  )
  // the node must show the cluster ID this master secret derives: nothing is sent to another node
  measurements.set(CLUSTER_ID_PCR, { expected: clusterIdPcrValue(clusterId), warnOnly: false })
  let verified: ValidationResult | undefined
  const credentials = createAttestedChannelCredentials({
    validators: [createValidator(variant, measurements, undefined, options)],
    onVerified: (r) => (verified = r),
  })
  const client = new APIClient(address, credentials, { 'grpc.enable_retries': 0 })
  try {
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + 30_000, (err) => (err ? reject(err) : resolve())),
    )
    if (!verified) throw new Error('the channel is ready, but no handshake was verified')
    const key = opts.bindTo ? opts.bindTo(verified.userData) : verified.userData
    const resume = InitRequest.fromPartial({
      initSecret: request.initSecret,
      resumeProof: resumeProof(deriveResumeKey(opts.master ?? master), key),
    })
    return await callInit(client, resume)
  } finally {
    client.close()
  }
}

describe('resume over aTLS (swtpm, cryptsetup, kubeadm contract fake)', function () {
  this.timeout(120_000)
  let node: LocalNode
  let running: RunningNode | undefined
  beforeEach(async () => {
    node = await startLocalNode()
    running = undefined
  })
  afterEach(async () => {
    await running?.daemon.stop(1_000)
    await node.stop()
  })

  /**
   * An Init whose caller goes away while kubeadm runs (past the node lock); kubeadm then finishes.
   * `workspace`: the request carries the workspace's master secret and salt, as a cut-off `init`
   * leaves them there.
   */
  async function interruptedInit(
    opts: { workspace?: boolean } = {},
  ): Promise<{ r: RunningNode; request: InitRequest }> {
    const r = (running = await startNode(node))
    const request = opts.workspace ? await workspaceRequest() : await initRequest(node)
    const hold = await node.holdKubeadm()
    const client = await attestedClient(node, r.address)
    const gone = new AbortController()
    const reply = callInit(client, request, gone.signal)
    await hold.reached()
    gone.abort()
    await reply
    client.close()
    await callerGoneSeen(r)
    await hold.release()
    const kept = nodePaths(node.root).initResultFile
    // the rest of init (kubeadm fake, certificates) runs on a machine the parallel test jobs share
    await eventually(
      'the kept answer',
      () =>
        stat(kept).then(
          () => true,
          () => undefined,
        ),
      30_000,
    )
    return { r, request }
  }

  it('the node keeps the answer on its state disk (0600, no master secret in it) and hands it to a resume over aTLS', async () => {
    const { r, request } = await interruptedInit()
    const kept = nodePaths(node.root).initResultFile
    // the rest of init (kubeadm fake, certificates) runs on a machine the parallel test jobs share
    expect((await stat(kept)).mode & 0o777).to.equal(0o600)
    const text = await readFile(kept, 'utf8')
    const master = parseClusterKmsUri(request.kmsUri)
    for (const secret of [master.key, master.salt])
      for (const encoding of ['hex', 'base64', 'base64url'] as const)
        expect(text, `the master secret (${encoding})`).to.not.include(secret.toString(encoding))
    expect(await settledWithin(r.daemon.done, 200), 'still serving').to.equal(false)

    const resumed = await resumeOverAtls(node, r.address, request)
    expect(resumed.code, resumed.details).to.equal(status.OK)
    expect(resumed.kubeconfig?.toString()).to.include('client-certificate-data')
    await r.daemon.done
    expect(r.daemon.outcome).to.equal('initialized')
    expect(await stat(kept).catch(() => undefined), 'the kept copy is gone').to.equal(undefined)
    expect(await pcr15(node)).to.not.deep.equal(Buffer.alloc(32))
  })

  /** What a cut-off `init` left: the master secret (0600) and the salt in the state; the request it sent. */
  async function workspaceRequest(): Promise<InitRequest> {
    const ws = workspacePaths(node.workspace)
    const secret = generateMasterSecret()
    const measurementSalt = Buffer.alloc(32, 0x33)
    await writeMasterSecret(ws.masterSecret, secret)
    await recordMeasurementSalt(ws.state, await loadState(ws.state), measurementSalt)
    return initRequest(node, { kmsUri: clusterKmsUri(secret), measurementSalt })
  }

  it('init run again in the workspace resumes: resumed, the kubeconfig 0600 and the cluster ID in the state', async () => {
    const { r, request } = await interruptedInit({ workspace: true })
    await setClusterEndpoint(node.workspace, r.address)
    const result = await init(node.workspace)
    const master = parseClusterKmsUri(request.kmsUri)
    const clusterId = deriveClusterId(
      new ClusterKms(master.key, master.salt).measurementSecret(),
      request.measurementSalt,
    )
    expect(result).to.include({
      resumed: true,
      masterSecretSource: 'reused',
      clusterID: clusterId.toString('hex'),
    })
    const ws = workspacePaths(node.workspace)
    expect((await stat(ws.adminConf)).mode & 0o777).to.equal(0o600)
    expect((await loadState(ws.state)).clusterValues).to.include({
      clusterID: clusterId.toString('hex'),
      measurementSalt: request.measurementSalt.toString('hex'),
    })
    await r.daemon.done
  })

  it('a connection that breaks while the node runs kubeadm: the same run attests the node again, resumes and saves the answer', async () => {
    const r = (running = await startNode(node))
    const proxy = await startCuttingProxy(r.address)
    try {
      await setClusterEndpoint(node.workspace, proxy.address)
      const hold = await node.holdKubeadm()
      const lines: string[] = []
      const titles: string[] = []
      const log = createLogger({ level: 'warn', write: (l) => lines.push(l) })
      const run = init(node.workspace, { log, titles })
      await hold.reached() // the node took its lock for this request
      proxy.cut()
      await callerGoneSeen(r)
      await hold.release()
      const result = await run
      expect(result).to.include({ masterSecretSource: 'generated', resumed: false })
      const { clusterValues } = await loadState(workspacePaths(node.workspace).state)
      expect(clusterValues.clusterID).to.equal(result.clusterID)
      expect((await stat(workspacePaths(node.workspace).adminConf)).mode & 0o777).to.equal(0o600)
      expect(proxy.accepted, 'a second, freshly attested connection').to.equal(2)
      expect(lines.join('\n')).to.include(
        'The connection to the node broke after the request reached it; resuming',
      )
      expect(
        titles.some((t) =>
          t.startsWith(`The connection to ${proxy.address} broke after the request reached it`),
        ),
      ).to.equal(true)
      expect(titles).to.include(
        `Resuming: the node at ${proxy.address} took its lock for this request; fetching its answer`,
      )
      await r.daemon.done // the answer was handed over: the node's init service is finished
    } finally {
      await proxy.close()
    }
  })

  it('a file at constellation-admin.conf: refused before anything is sent; the node keeps its answer', async () => {
    const { r } = await interruptedInit({ workspace: true })
    await setClusterEndpoint(node.workspace, r.address)
    const ws = workspacePaths(node.workspace)
    await writeFile(ws.adminConf, "the operator's own\n")
    const before = await workspaceFiles(node.workspace)
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    expect((err as Error).message).to.include(`${ws.adminConf} already exists`)
    expect(await workspaceFiles(node.workspace)).to.deep.equal(before)
    expect(await stat(nodePaths(node.root).initResultFile).then(() => true)).to.equal(true)
    expect(await settledWithin(r.daemon.done, 200), 'still serving').to.equal(false)
  })

  it('a resume the node refuses (another init secret in the state) changes nothing in the workspace', async () => {
    const { r } = await interruptedInit({ workspace: true })
    await setClusterEndpoint(node.workspace, r.address)
    const ws = workspacePaths(node.workspace)
    const state = await readFile(ws.state, 'utf8')
    await writeFile(ws.state, state.replace(/initSecret: \w+/, `initSecret: ${'ab'.repeat(32)}`))
    const before = await workspaceFiles(node.workspace)
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    expect((err as Error).message).to.equal(
      'resuming the earlier init failed on the node: invalid init secret',
    )
    expect((err as CliError).hint).to.include('nothing changed on the node or in this workspace')
    expect(await workspaceFiles(node.workspace)).to.deep.equal(before)
    expect(await stat(nodePaths(node.root).initResultFile).then(() => true)).to.equal(true)
  })

  const refused: Record<
    string,
    { opts: Parameters<typeof resumeOverAtls>[3]; failure: RegExp; request?: (r: InitRequest) => InitRequest }
  > = {
    'another master secret (another workspace)': {
      opts: { master: { key: Buffer.alloc(32, 0x55), salt: Buffer.alloc(32, 8) } },
      failure: /does not match the master secret this node was initialized with/,
    },
    'a proof made for another server (one that posed as this node)': {
      opts: { bindTo: () => Buffer.alloc(32, 0xab) },
      failure: /bound to a certificate key this node did not attest/,
    },
    'a wrong init secret': {
      opts: {},
      request: (r) => ({ ...r, initSecret: Buffer.from('0123456789abcdef0123456789abcdef') }),
      failure: /invalid init secret/,
    },
  }
  for (const [name, tc] of Object.entries(refused))
    it(`${name}: PERMISSION_DENIED, no kubeconfig, the node keeps its answer for the genuine caller`, async () => {
      const { r, request } = await interruptedInit()
      const kept = await readFile(nodePaths(node.root).initResultFile)
      const reply = await resumeOverAtls(node, r.address, tc.request ? tc.request(request) : request, tc.opts)
      expect(reply.code, reply.details).to.equal(status.PERMISSION_DENIED)
      expect(reply.failure).to.match(tc.failure)
      expect(reply.kubeconfig).to.equal(undefined)
      expect(reply.logChunks).to.deep.equal([])
      expect(await readFile(nodePaths(node.root).initResultFile)).to.deep.equal(kept)
      expect(await settledWithin(r.daemon.done, 200), 'still serving').to.equal(false)
    })
})
