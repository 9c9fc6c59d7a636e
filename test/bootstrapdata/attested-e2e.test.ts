/**
 * Attested bootstrap data, end to end and as processes: `bootstrap-data generate --format
 * attested-…` (the built CLI) renders user data for test/fixtures/bootstrapdata/attested.yaml (one
 * control plane, one worker) from an operator's workspace; each node runs `bootstrap run` on the
 * node config that data installs; `constellation init` from that same workspace initializes the
 * control plane, whose key and join services then start; the worker joins through the join service.
 *
 * The node configs are taken from the generated documents as the node reads them and rewritten only
 * where this machine differs from the Machines' network: the TPM, the disk image, the node root, the
 * listen ports, and the members' addresses (all on loopback, as test/support/test-cluster.ts lays them
 * out). The attestation variant, the init secret hash, each node's name and role, its peers and the
 * cluster endpoint's port come from the generated data. Kubernetes is the contract fakes of DESIGN §4.
 *
 * About 5–10 s per format: two swtpm-backed nodes, each re-keying a LUKS2 image under cryptsetup.
 */
import { X509Certificate } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { CLUSTER_ID_PCR } from '../../src/lib/bootstrapper/index.js'
import type { OutputFormat } from '../../src/lib/bootstrapdata/index.js'
import {
  parseBootstrapperNodeConfig,
  readNodeState,
  type NodeMember,
} from '../../src/lib/nodeconfig/index.js'
import {
  type BootstrapperNodeConfig,
  type BootstrapperNodeConfigFile,
} from '../../src/lib/nodeconfig/node-config.js'
import { nodePaths, NODE_CONFIG_PATH } from '../../src/lib/paths.js'
import { formatHostPort, parseHostPort } from '../../src/lib/system/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import {
  joinAuditLines,
  startTestCluster,
  type ClusterNode,
  type TestCluster,
} from '../support/test-cluster.js'
import { FIXTURES } from './helpers.js'
import { installedNodeConfig } from './node-files.js'

/** A generated node config as written (before the loader fills in defaults). */
type GeneratedNodeConfig = Record<string, unknown> & {
  stateDisk: { device: string }
  metadata: { provider: 'static'; self: NodeMember; peers: NodeMember[]; loadBalancerEndpoint?: string }
}

/** The keys the rewrite may add or change: where this machine's devices, root and ports are. */
const LOCAL_KEYS = [
  'tpm',
  'root',
  'initServer',
  'verifyService',
  'joinService',
  'keyService',
  'recoveryServer',
  'stateDisk',
  'metadata',
]

const pcr15 = async (node: ClusterNode) =>
  (await readPcrs(node.local.swtpm.open, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR)

/** `bootstrap-data generate` (the built CLI) from `workspace`: each machine's installed node config. */
async function generate(
  format: OutputFormat,
  workspace: string,
  out: string,
): Promise<Map<string, GeneratedNodeConfig>> {
  const args = ['bootstrap-data', 'generate', '-f', path.join(FIXTURES, 'attested.yaml'), '-C', workspace]
  const result = await runCli([...args, '--format', format, '-o', `${out}/`, '--json'])
  expect(result.code, result.stderr).to.equal(0)
  const { machines } = JSON.parse(result.stdout) as { machines: Array<{ machine: string; file: string }> }
  const configs = new Map<string, GeneratedNodeConfig>()
  for (const m of machines) {
    const text = installedNodeConfig(await readFile(m.file, 'utf8'))
    expect(text, `${m.machine}: no ${NODE_CONFIG_PATH} in its data`).to.not.equal('')
    configs.set(m.machine, parse(text) as GeneratedNodeConfig)
  }
  return configs
}

/**
 * The generated node config on this machine: `local` (the harness's config for the node) supplies
 * its TPM, disk image, root and ports; every member's address becomes the loopback address the
 * harness gives that node (`address`), and the cluster endpoint (the load balancer in front of the
 * control planes) becomes `endpointHost` at the generated port. The rest is as generated, and the
 * result is loaded with `bootstrap run`'s own loader.
 */
function onThisMachine(
  generated: GeneratedNodeConfig,
  local: BootstrapperNodeConfigFile,
  address: (member: string) => string,
  endpointHost: string,
): BootstrapperNodeConfig {
  const { metadata } = generated
  const endpoint = metadata.loadBalancerEndpoint && parseHostPort(metadata.loadBalancerEndpoint)
  const rewritten = {
    ...generated,
    tpm: local.tpm,
    root: local.root,
    initServer: local.initServer,
    verifyService: local.verifyService,
    joinService: local.joinService,
    keyService: local.keyService,
    recoveryServer: local.recoveryServer,
    // pbkdf: the keyslot cost only (cryptsetup's default argon2id would take seconds and much memory here)
    stateDisk: { ...generated.stateDisk, device: local.stateDisk.device, pbkdf: local.stateDisk.pbkdf },
    metadata: {
      ...metadata,
      self: { ...metadata.self, vpcIP: address(metadata.self.name) },
      peers: metadata.peers.map((p) => ({ ...p, vpcIP: address(p.name) })),
      ...(endpoint ? { loadBalancerEndpoint: formatHostPort(endpointHost, endpoint.port) } : {}),
    },
  }
  const changed = Object.keys(rewritten).filter(
    (k) => JSON.stringify(rewritten[k as keyof typeof rewritten]) !== JSON.stringify(generated[k]),
  )
  expect(LOCAL_KEYS, `${metadata.self.name}: rewritten keys`).to.include.members(changed)
  const parsed = parseBootstrapperNodeConfig(stringifyYaml(rewritten), `${metadata.self.name}'s node config`)
  expect(parsed.metadata.provider).to.equal('static')
  return parsed as BootstrapperNodeConfig
}

describe('attested bootstrap data end to end: init, then the worker joins through the join service (CLI processes)', function () {
  this.timeout(180_000)
  let cluster: TestCluster
  beforeEach(async () => (cluster = await startTestCluster()))
  afterEach(() => cluster?.stop())

  for (const format of ['attested-cloud-config', 'attested-ignition'] as const) {
    it(`${format}: the generated node configs run bootstrap run; init on cp-0, worker-0 joins`, async () => {
      const generated = new Map<string, GeneratedNodeConfig>() // filled once cp-0's workspace exists
      const written = new Map<string, BootstrapperNodeConfig>()
      const members = new Map<string, NodeMember>()
      const nodeConfig = (name: string) => (local: BootstrapperNodeConfigFile) => {
        const config = generated.get(name) ?? expect.fail(`no generated node config for ${name}`)
        const address = (member: string) =>
          members.get(member)?.vpcIP ?? expect.fail(`${name}: no node for member ${member}`)
        const result = onThisMachine(config, local, address, address('cp-0'))
        written.set(name, result)
        return result
      }
      const add = async (name: string, role: NodeMember['role']) => {
        const node = await cluster.addNode({ name, role, peers: [], nodeConfig: nodeConfig(name) })
        members.set(name, node.member)
        return node
      }
      const cp0 = await add('cp-0', 'control-plane')
      const worker = await add('worker-0', 'worker')

      // the operator generates the data from the workspace it will run init from
      const workspace = cp0.local.workspace
      for (const [machine, config] of await generate(format, workspace, path.join(cp0.local.dir, 'data')))
        generated.set(machine, config)
      expect([...generated.keys()]).to.deep.equal(['cp-0', 'worker-0'])

      // 1. cp-0 boots on its generated node config and is initialized by `constellation init`.
      const daemon0 = await cp0.start()
      const cpConfig = written.get('cp-0') ?? expect.fail('cp-0 was not started')
      const cpGenerated = generated.get('cp-0') ?? expect.fail('no cp-0 config')
      expect(cpConfig.attestationVariant).to.equal(cpGenerated.attestationVariant)
      expect(cpConfig.metadata.self).to.deep.include({ name: 'cp-0', role: 'control-plane' })
      // the hash from the generated data (bcrypt: its own salt), not the harness's own
      expect(cpConfig.initSecretHash)
        .to.equal(cpGenerated.initSecretHash)
        .and.not.equal(cp0.local.initSecretHash)
      const init = await runCli(['init', '--skip-helm', '-C', workspace, '--json'])
      await daemon0.expectInitSucceeded(init)
      expect((await daemon0.exited).code).to.equal(0)
      await cp0.servicesUp()

      // 2. worker-0 boots on its generated node config: its JoinClient finds the join service from
      // the generated metadata (the cluster endpoint, then its control-plane peers) and joins.
      const workerDaemon = await worker.start()
      const workerConfig = written.get('worker-0') ?? expect.fail('worker-0 was not started')
      expect(workerConfig.metadata.self).to.deep.include({ name: 'worker-0', role: 'worker' })
      expect(workerConfig.metadata.peers.map((p) => [p.name, p.role])).to.deep.equal([
        ['cp-0', 'control-plane'],
      ])
      const joined = await workerDaemon.exited
      expect(joined.code, joined.stderr).to.equal(0)
      expect(joined.stderr).to.include('Node joined the cluster')

      // the join service admitted it (its audit line) and handed it a kubelet certificate
      expect((await joinAuditLines(cp0)).map((l) => [l.node, l.verdict])).to.deep.include(['worker-0', 'ok'])
      const wp = nodePaths(worker.local.root)
      expect(new X509Certificate(await readFile(wp.kubeletClientCert)).subject).to.include(
        'CN=system:node:worker-0',
      )
      expect((await stat(wp.kubeletClientKey)).mode & 0o777).to.equal(0o600)
      expect((await readNodeState(wp)).role).to.equal('worker')
      // its node lock is taken, with the cluster's ID: PCR 15 as on the control plane, not zero
      const [cpPcr, workerPcr] = [await pcr15(cp0), await pcr15(worker)]
      expect(workerPcr?.some((b) => b !== 0)).to.equal(true)
      expect(workerPcr).to.deep.equal(cpPcr)
      // kubeadm join ran against the cluster endpoint from the generated data, and registered the Node
      // (its kubelet.conf is the harness API fake's kubeconfig, where the fake's kubelet stand-in reports)
      const joinedLine = joined.stderr.split('\n').find((l) => l.includes('Node joined the cluster')) ?? ''
      expect(JSON.parse(joinedLine)).to.include({
        apiServerEndpoint: workerConfig.metadata.loadBalancerEndpoint,
      })
      expect((await stat(path.join(wp.kubernetesDir, 'kubelet.conf'))).isFile()).to.equal(true)
      const nodes = cluster.api
        .list('v1', 'nodes')
        .map((n) => n.metadata.name)
        .sort()
      expect(nodes).to.deep.equal(['cp-0', 'worker-0'])
      expect(await worker.systemd.pid('constellation-joinservice.service')).to.equal(undefined)
    })
  }
})
