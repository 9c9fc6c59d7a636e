/**
 * What a mini node runs on, behind one boundary, so that `mini up` and `mini reboot` have one flow:
 * `process` (the default) is a supervisor per node (its "systemd", node-boot.ts) in a network
 * namespace or on a loopback address; `vm` is a QEMU virtual machine per node (vm-node.ts) booted
 * from the cached node image under real systemd, on a tap of the cluster's bridge. Each kind says
 * how a node joins the network, is provisioned, powered on and off, watched while it boots, where
 * the SIMULATED Kubernetes API listens for it, and what the operator's config expects of it.
 */
import path from 'node:path'
import { waitUntilBooted, type BootWatchOptions } from './boot-watch.js'
import { NODE_PORTS, type MiniNodeRecord, type MiniPaths } from './layout.js'
import { powerOffNode, powerOnNode, provisionNode, type NodeBootContext } from './node-boot.js'
import { bootPcrs } from './measured-boot.js'
import {
  powerCutVmNode,
  powerOffVmNode,
  powerOnVmNode,
  provisionVmNode,
  resetVmNode,
  vmNodeFiles,
  waitUntilVmBooted,
  type VmBootContext,
} from './vm-node.js'
import { GUEST_NODE, GUEST_PROJECT_DIR, VM_FIRMWARE_PCRS } from '../vm/index.js'
import { simulatorPaths } from '../simulator/index.js'

export type MachineKind = 'process' | 'vm'

/** One power-on of a node: its wait resolves once the boot's `bootstrap run` is done. */
export interface MachineBoot {
  node: MiniNodeRecord
  wait(opts: BootWatchOptions): Promise<void>
}

/** Where the SIMULATED Kubernetes API runs: in cp-0's namespace at its address, or on the host. */
export interface ApiPlacement {
  execPrefix: string[]
  host: string
  certHosts: string[]
}

export interface Machines {
  readonly kind: MachineKind
  /** Its place on the cluster network: a namespace and veth (process, as root) or a tap (vm). */
  addToNetwork(node: MiniNodeRecord): Promise<void>
  /** A new machine: its folders, an empty state disk, its TPM's folder and its node config. */
  provision(node: MiniNodeRecord): Promise<void>
  /** Powers the node on (detached: it outlives the command); watch it with the boot's wait. */
  powerOn(node: MiniNodeRecord): Promise<MachineBoot>
  /** In order (a process supervisor's shutdown, a VM's ACPI power button), or `hard`: a power cut. */
  powerOff(node: MiniNodeRecord, opts: { hard?: boolean }): Promise<{ orderly: boolean }>
  /** vm only: the reset button (a QEMU restart): no shutdown, the TPM re-initialised, disks kept. */
  reset?(node: MiniNodeRecord): Promise<MachineBoot>
  /** Where the SIMULATED API listens and what its serving certificate names. */
  api(cp0: MiniNodeRecord, controlPlanes: MiniNodeRecord[]): ApiPlacement
  /** The log that tells why a node's Init server or join service stays closed. */
  bootstrapLog(node: MiniNodeRecord): string
  joinServiceLog(node: MiniNodeRecord): string
  /** The simulator's kubeadm and kubelet launchers as the node sees them (components' data URLs). */
  componentFiles(hostFiles: { nodeBinary: string; kubeadmFake: string; kubeletUnit: string }): {
    nodeBinary: string
    kubeadmFake: string
    kubeletUnit: string
  }
  /** PCRs 0–9 as every node's boot leaves them: the config's expected values. */
  bootPcrs(): Promise<Map<number, Buffer>>
}

export function processMachines(ctx: NodeBootContext, paths: MiniPaths, clusterId: string): Machines {
  const files = (node: MiniNodeRecord) => paths.node(node.name)
  return {
    kind: 'process',
    addToNetwork: (node) => ctx.network.addNode(node.index),
    provision: (node) => provisionNode(ctx, node, files(node)),
    async powerOn(node) {
      const boot = await powerOnNode(ctx, node, files(node), clusterId)
      return { node, wait: (opts) => waitUntilBooted(boot, opts) }
    },
    powerOff: (node, opts) => powerOffNode(clusterId, node.name, opts),
    api: (cp0) => ({
      execPrefix: ctx.network.execPrefix(cp0.index),
      host: cp0.address,
      certHosts: [cp0.address],
    }),
    bootstrapLog: (node) => files(node).log('bootstrap'),
    joinServiceLog: (node) => path.join(files(node).unitState, 'constellation-joinservice.service.log'),
    componentFiles: (hostFiles) => hostFiles,
    bootPcrs: () => bootPcrs(ctx.cli, ctx.unitTemplates),
  }
}

export function vmMachines(ctx: VmBootContext, paths: MiniPaths): Machines {
  const files = (node: MiniNodeRecord) => vmNodeFiles(paths.node(node.name).dir)
  const booting = (node: MiniNodeRecord): MachineBoot => ({
    node,
    wait: (opts) => waitUntilVmBooted(ctx.clusterId, node, files(node), opts),
  })
  return {
    kind: 'vm',
    addToNetwork: async (node) => {
      await ctx.network.addTap(node.index)
    },
    provision: (node) => provisionVmNode(ctx, node, files(node)),
    async powerOn(node) {
      await powerOnVmNode(ctx, node, files(node))
      return booting(node)
    },
    powerOff: async (node, opts) => {
      if (!opts.hard) return powerOffVmNode(ctx.clusterId, node.name, files(node))
      await powerCutVmNode(ctx.clusterId, node.name)
      return { orderly: false }
    },
    async reset(node) {
      await resetVmNode(ctx, node, files(node))
      return booting(node)
    },
    // the host's end of the bridge: every guest reaches it; control planes forward the API's port
    api: (_cp0, controlPlanes) => ({
      execPrefix: [],
      host: ctx.network.hostAddress,
      certHosts: [...controlPlanes.map((n) => n.address), ctx.network.hostAddress],
    }),
    bootstrapLog: (node) => files(node).consoleLog,
    joinServiceLog: (node) => files(node).consoleLog,
    componentFiles: () => {
      const { kubeadmFake, kubeletUnit } = simulatorPaths(GUEST_PROJECT_DIR)
      return { nodeBinary: GUEST_NODE, kubeadmFake, kubeletUnit }
    },
    bootPcrs: async () => new Map([...VM_FIRMWARE_PCRS].map(([pcr, hex]) => [pcr, Buffer.from(hex, 'hex')])),
  }
}

/** The API simulator's port on the host (vm) or on cp-0 (process). */
export const apiListen = (placement: ApiPlacement) => `${placement.host}:${NODE_PORTS.apiServer}`
