/**
 * A cluster on one machine for end-to-end tests: nodes are `constellation bootstrap run` processes
 * (each its own swtpm, LUKS2 image and root), control planes run the real key and join services
 * from the project's systemd units (through FakeSystemctl), and the cluster's Kubernetes API is the
 * FakeApiServer TEST DOUBLE, whose storage folder the kubeadm contract fake reads and writes.
 *
 * Every node has a loopback address of its own, its vpcIP, which its requests leave from (a control
 * plane's is where its services listen: 127.0.0.1 unless given, 127.0.0.2, … for more, with the
 * same join port, as control planes on separate hosts would; a worker's is 127.0.9.n). A metadata
 * service (MetadataServer, as in mini) tells each node who it is and lists every node, which is how
 * a join service knows who asks; its cluster endpoint, which a joining node asks first, is the
 * first of the node's `peers` (as a load balancer would pick one).
 */
import { readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { parseJoinConfig } from '../../src/lib/attestation/index.js'
import {
  attestedRejoinTicketRequester,
  CLUSTER_ID_PCR,
  type SetupOutcome,
} from '../../src/lib/bootstrapper/index.js'
import { httpMetadataClient, type NodeMember, type NodeRole } from '../../src/lib/nodeconfig/index.js'
import { resolveMetadata } from '../../src/lib/nodeconfig/metadata.js'
import { type BootstrapperNodeConfigFile } from '../../src/lib/nodeconfig/node-config.js'
import { MetadataServer } from '../../src/lib/mini/metadata-server.js'
import { nodePaths } from '../../src/lib/paths.js'
import { createLogger, createRunner } from '../../src/lib/system/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { nodeIssuer } from '../../src/wiring/node.js'
import { buildStateDiskSetup, nodeRecoveryEndpoint } from '../../src/wiring/state-disk.js'
import { runCli, type CliResult } from './cli.js'
import { eventually } from './eventually.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import type { FakeSystemd } from './fake-systemd.js'
import { startDaemonProcess, startLocalNode, type DaemonProcess, type LocalNode } from './local-node.js'
import { freePort, waitForPort } from './ports.js'
import { RecordingMounter } from './recording-mounter.js'
import { makeTempDir } from './temp.js'
import { writeFile } from 'node:fs/promises'
import { stringifyYaml } from '../../src/lib/yaml/index.js'

/** One audit line of a join service (its journal holds other lines too). */
export interface AuditLine {
  time: string
  msg: string
  rpc?: string
  node?: string
  role?: string
  verdict?: string
  reason?: string
}

/** The audit lines in a control plane's join-service journal, oldest first. */
export async function joinAuditLines(cp: ClusterNode): Promise<AuditLine[]> {
  return (await cp.systemd.journal('constellation-joinservice.service'))
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as AuditLine)
    .filter((l) => l.msg === 'Join request')
}

/** Resolves once every one of these control planes' join services enforces `hex` as PCR 4. */
export async function enforcingPcr4(cps: readonly ClusterNode[], hex: string): Promise<void> {
  for (const cp of cps)
    await eventually(`${cp.spec.name} enforcing the new set`, async () => {
      const text = await readFile(nodePaths(cp.local.root).joinConfigFile, 'utf8')
      return parseJoinConfig(text).get(4)?.expected.toString('hex') === hex ? true : undefined
    })
}

export type ClusterLocalNode = Omit<LocalNode, 'nodeConfig'> & {
  nodeConfig(listen: string): BootstrapperNodeConfigFile
}

export interface ClusterNodeSpec {
  name: string
  role: NodeRole
  /** The control plane this node asks first for a ticket (its cluster endpoint) is the first of these. */
  peers: NodeMember[]
  /**
   * A control plane's address, where its own key and join services listen; 127.0.0.1 unless given
   * (a second control plane needs one of its own).
   */
  serviceHost?: string
  /**
   * The node config to run instead of the harness's own (e.g. one that bootstrap data generated),
   * asked for each time the node starts. `local` is the harness's config for this node: its TPM,
   * disk image, root, ports, and metadata from this spec on loopback.
   */
  nodeConfig?: (local: BootstrapperNodeConfigFile) => BootstrapperNodeConfigFile
}

export interface ClusterNode {
  spec: ClusterNodeSpec
  /** The harness's node; its config names the harness's metadata service. */
  local: ClusterLocalNode
  systemd: FakeSystemd
  keyPort: number
  /** The member other nodes list as their peer, at this node's service address. */
  member: NodeMember
  /** Starts `bootstrap run` (it exits once initialized or joined); `env` reaches it and kubeadm. */
  start(env?: NodeJS.ProcessEnv): Promise<DaemonProcess>
  /** Resolves once this control plane's join service accepts connections. */
  servicesUp(): Promise<void>
  /**
   * A reboot: the node's services stop, its swtpm restarts over the same state (PCRs reset), its
   * memory-backed /run (the boot's key, scratch files) is emptied; the disk image and what the
   * state disk holds stay.
   */
  reboot(): Promise<void>
  /** `state-disk setup` in this process (the mount boundary is a RecordingMounter): see BootingDisk. */
  setupDisk(): Promise<BootingDisk>
  /** `bootstrap run` as a process on a node that needs no Init server port (a rebooted one): its result. */
  bootRun(): Promise<CliResult>
}

export interface BootingDisk {
  /** Resolves with the outcome once setup is done (it waits while the node has no key). */
  done: Promise<SetupOutcome>
  mounter: RecordingMounter
  /** The JSON lines setup logged so far. */
  lines: string[]
  /** HOST:PORT where the node serves `constellation recover` while it waits. */
  recoveryEndpoint: string
  /** SIGTERM's effect: the wait ends, setup rejects. */
  stop(): Promise<void>
}

export interface TestCluster {
  api: FakeApiServer
  /** The API's storage, which the kubeadm fake reads (KUBEADM_FAKE_API_DIR). */
  apiDir: string
  /**
   * The cluster admin's kubeconfig for the API fake. The operator's constellation-admin.conf names
   * the cluster endpoint's port 6443 instead, where nothing listens on this machine.
   */
  adminKubeconfig: string
  joinPort: number
  addNode(spec: ClusterNodeSpec): Promise<ClusterNode>
  stop(): Promise<void>
}

export async function startTestCluster(): Promise<TestCluster> {
  const { dir, cleanup } = await makeTempDir('constell-cluster-')
  const apiDir = path.join(dir, 'api')
  const api = await new FakeApiServer({ dir: apiDir }).start()
  const adminKubeconfig = path.join(dir, 'admin.conf')
  await writeFile(adminKubeconfig, api.kubeconfig(), { mode: 0o600 })
  const joinPort = await freePort()
  const nodes: ClusterNode[] = []
  // TEST DOUBLE of the cloud's metadata API, answering as mini's does
  const metadata = new MetadataServer((caller) => {
    const members = nodes.map((n) => n.member)
    const asking = nodes.find((n) => n.member.vpcIP === caller)
    const preferred = asking?.spec.peers[0]?.vpcIP ?? asking?.member.vpcIP ?? '127.0.0.1'
    return { members, endpointHost: preferred, initSecretHash: '' }
  })
  const metadataUrl = await metadata.start('127.0.0.1:0')
  let workers = 0
  const daemons: DaemonProcess[] = []
  const kubeadmEnv = { KUBEADM_FAKE_API_DIR: apiDir, KUBEADM_FAKE_ADMIN_KUBECONFIG: adminKubeconfig }

  async function addNode(spec: ClusterNodeSpec): Promise<ClusterNode> {
    const local = await startLocalNode()
    const keyPort = await freePort()
    const serviceHost =
      spec.serviceHost ?? (spec.role === 'control-plane' ? '127.0.0.1' : `127.0.9.${++workers}`)
    const systemd = local.systemd
    const node: ClusterNode = {
      spec,
      local: {
        ...local,
        nodeConfig: (listen) => {
          const base = local.nodeConfig(listen)
          const harness: BootstrapperNodeConfigFile = {
            ...base,
            joinService: { listen: `${serviceHost}:${joinPort}` },
            keyService: { listen: `${serviceHost}:${keyPort}` },
            metadata: { provider: 'http', url: metadataUrl, sourceAddress: serviceHost },
          }
          return spec.nodeConfig ? spec.nodeConfig(harness) : harness
        },
      },
      systemd,
      keyPort,
      member: { name: spec.name, role: spec.role, vpcIP: serviceHost },
      async start(env = {}) {
        const daemon = await startDaemonProcess(node.local, { ...kubeadmEnv, ...env })
        daemons.push(daemon)
        return daemon
      },
      servicesUp: () =>
        waitForPort(joinPort, { host: serviceHost, timeoutMs: 60_000 }).catch(async (err: unknown) => {
          const journals = await Promise.all(
            ['constellation-keyservice.service', 'constellation-joinservice.service'].map(
              async (unit) => `${unit}:\n${await systemd.journal(unit)}`,
            ),
          )
          throw new Error(`${spec.name}'s services are not up\n${journals.join('\n')}`, { cause: err })
        }),
      async reboot() {
        await systemd.stop()
        await local.swtpm.restart()
        const paths = nodePaths(local.root)
        await rm(paths.runtimeDir, { recursive: true, force: true })
        await rm(path.dirname(paths.stateDiskInitialKeyFile), { recursive: true, force: true })
      },
      setupDisk: () => setupDisk(node),
      async bootRun() {
        await writeFile(
          local.configFile,
          stringifyYaml(node.local.nodeConfig(`127.0.0.1:${await freePort()}`)),
        )
        return runCli(['bootstrap', 'run', '--config', local.configFile], {
          timeoutMs: 60_000,
          asUnit: true,
          env: { ...systemd.env, ...kubeadmEnv },
        })
      },
    }
    nodes.push(node)
    return node
  }

  /** The node's own config and TPM, as the state-disk unit would read them after this boot's swtpm start. */
  async function setupDisk(node: ClusterNode): Promise<BootingDisk> {
    const config = await resolveMetadata(node.local.nodeConfig('127.0.0.1:0'), httpMetadataClient())
    if (!config.metadata) throw new Error(`${node.spec.name}'s node config has no metadata`)
    const self = config.metadata.self
    const paths = nodePaths(config.root)
    const mounter = new RecordingMounter(paths)
    const lines: string[] = []
    const log = createLogger({ format: 'json', write: (l) => lines.push(l), component: 'state-disk' })
    const issuer = nodeIssuer(config, node.local.swtpm.open)
    const stop = new AbortController()
    const done = buildStateDiskSetup(
      { ...config, metadata: config.metadata, stateDisk: node.local.nodeConfig('').stateDisk },
      {
        openTpm: node.local.swtpm.open,
        runner: createRunner(),
        mounter,
        requestRejoinTicket: attestedRejoinTicketRequester(issuer, undefined, self.vpcIP),
        recoveryEndpoint: nodeRecoveryEndpoint(config, issuer, log),
        log,
        retry: { initialDelayMs: 200, maxDelayMs: 1_000, jitter: 0 },
      },
      stop.signal,
    )
    done.catch(() => {}) // a test that stops it awaits the rejection itself
    return {
      done,
      mounter,
      lines,
      recoveryEndpoint: config.recoveryServer.listen,
      async stop() {
        stop.abort(new Error('state-disk setup was stopped'))
        await done.catch(() => {})
      },
    }
  }

  return {
    api,
    apiDir,
    adminKubeconfig,
    joinPort,
    addNode,
    async stop() {
      await Promise.allSettled(daemons.map((d) => d.stop()))
      await Promise.allSettled(nodes.map((n) => n.local.stop()))
      await metadata.stop()
      await api.stop()
      await cleanup()
    },
  }
}

/** A node's PCR 15 (zero until it is initialized or joined; the cluster ID's hash after). */
export const pcr15 = async (node: ClusterNode): Promise<Buffer | undefined> =>
  (await readPcrs(node.local.swtpm.open, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR)

/** cp_0 of a new cluster: `bootstrap run`, `init --skip-helm`, then its key and join services up. */
export async function initFirstControlPlane(cluster: TestCluster): Promise<ClusterNode> {
  const cp0 = await cluster.addNode({ name: 'cp_0', role: 'control-plane', peers: [] })
  const daemon = await cp0.start()
  await daemon.expectInitSucceeded(await runCli(['init', '--skip-helm', '-C', cp0.local.workspace, '--json']))
  const exited = await daemon.exited
  if (exited.code !== 0) throw new Error(`cp_0's bootstrap run exited ${exited.code}:\n${exited.stderr}`)
  await cp0.servicesUp()
  return cp0
}
