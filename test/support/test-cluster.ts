/**
 * A cluster on one machine for end-to-end tests: nodes are `constellation bootstrap run` processes
 * (each its own swtpm, LUKS2 image and root), control planes run the real key and join services
 * from the project's systemd units (through FakeSystemctl), and the cluster's Kubernetes API is the
 * FakeApiServer TEST DOUBLE, whose storage folder the kubeadm contract fake reads and writes.
 *
 * Every node's vpcIP is 127.0.0.1, the address its requests come from. A second control plane's
 * services listen on another loopback address (127.0.0.2, …) with the same join port, as control
 * planes on separate hosts would: a joining node dials its control-plane peers at its own join port.
 */
import path from 'node:path'
import type { NodeMember, NodeRole } from '../../src/lib/nodeconfig/index.js'
import { FakeApiServer } from './fake-apiserver.js'
import type { FakeSystemd } from './fake-systemd.js'
import { startDaemonProcess, startLocalNode, type DaemonProcess, type LocalNode } from './local-node.js'
import { freePort, waitForPort } from './ports.js'
import { makeTempDir } from './temp.js'
import { writeFile } from 'node:fs/promises'

export interface ClusterNodeSpec {
  name: string
  role: NodeRole
  /** The control planes this node may ask for a ticket. */
  peers: NodeMember[]
  /** Where this node's own key and join services listen (control planes); 127.0.0.1 unless given. */
  serviceHost?: string
}

export interface ClusterNode {
  spec: ClusterNodeSpec
  local: LocalNode
  systemd: FakeSystemd
  keyPort: number
  /** The member other nodes list as their peer, at this node's service address. */
  member: NodeMember
  /** Starts `bootstrap run` (it exits once initialized or joined). */
  start(): Promise<DaemonProcess>
  /** Resolves once this control plane's join service accepts connections. */
  servicesUp(): Promise<void>
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
  const daemons: DaemonProcess[] = []
  const kubeadmEnv = { KUBEADM_FAKE_API_DIR: apiDir, KUBEADM_FAKE_ADMIN_KUBECONFIG: adminKubeconfig }

  async function addNode(spec: ClusterNodeSpec): Promise<ClusterNode> {
    const local = await startLocalNode()
    const keyPort = await freePort()
    const serviceHost = spec.serviceHost ?? '127.0.0.1'
    const systemd = local.systemd
    const node: ClusterNode = {
      spec,
      local: {
        ...local,
        nodeConfig: (listen) => {
          const base = local.nodeConfig(listen)
          return {
            ...base,
            joinService: { listen: `${serviceHost}:${joinPort}` },
            keyService: { listen: `${serviceHost}:${keyPort}` },
            metadata: {
              provider: 'static',
              self: { name: spec.name, role: spec.role, vpcIP: '127.0.0.1' },
              peers: spec.peers,
            },
          }
        },
      },
      systemd,
      keyPort,
      member: { name: spec.name, role: spec.role, vpcIP: serviceHost },
      async start() {
        const daemon = await startDaemonProcess(node.local, kubeadmEnv)
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
    }
    nodes.push(node)
    return node
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
      await api.stop()
      await cleanup()
    },
  }
}
