/**
 * Resume over real aTLS: a node (swtpm, LUKS2 image, kubeadm contract fake) whose Init caller went
 * away after the node lock keeps the answer, and hands it to a caller who attests the node and
 * proves the init secret and the master secret, bound to that handshake. The rules in detail, on
 * stub parts: test/bootstrapper/init-resume.test.ts.
 */
import { readFile, stat } from 'node:fs/promises'
import { status } from '@grpc/grpc-js'
import { APIClient, InitRequest } from '../../src/gen/init.js'
import {
  clusterIdPcrValue,
  CLUSTER_ID_PCR,
  createValidator,
  type ValidationResult,
} from '../../src/lib/attestation/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import { loadConfig, validatorSettingsForConfig } from '../../src/lib/config/index.js'
import {
  ClusterKms,
  deriveClusterId,
  deriveResumeKey,
  parseClusterKmsUri,
  resumeProof,
  type MasterSecret,
} from '../../src/lib/kms/index.js'
import { nodePaths, workspacePaths } from '../../src/lib/paths.js'
import { settledWithin } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
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
import { startLocalNode, type LocalNode } from '../support/local-node.js'

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

  /** An Init whose caller goes away while kubeadm runs (past the node lock); kubeadm then finishes. */
  async function interruptedInit(): Promise<{ r: RunningNode; request: InitRequest }> {
    const r = (running = await startNode(node))
    const request = await initRequest(node)
    const hold = await node.holdKubeadm()
    const client = await attestedClient(node, r.address)
    const gone = new AbortController()
    const reply = callInit(client, request, gone.signal)
    await hold.reached()
    gone.abort()
    await reply
    client.close()
    await eventually(
      'the node to see its caller gone',
      async () => (await r.logs.collect()).toString().includes('The Init caller went away') || undefined,
      10_000,
    )
    await hold.release()
    const kept = nodePaths(node.root).initResultFile
    await eventually(
      'the kept answer',
      () =>
        stat(kept).then(
          () => true,
          () => undefined,
        ),
      10_000,
    )
    return { r, request }
  }

  it('the node keeps the answer on its state disk (0600, no master secret in it) and hands it to a resume over aTLS', async () => {
    const { r, request } = await interruptedInit()
    const kept = nodePaths(node.root).initResultFile
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
