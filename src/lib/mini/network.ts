/**
 * The network of a local cluster. As root every node gets its own network namespace, joined to a
 * bridge on the host by a veth pair (the host's end can be unplugged: a cut link); otherwise every
 * node gets its own loopback address. Either way a node has one address, and every service of a
 * node listens on it at the port a real node uses, so nodes find each other as on separate hosts.
 */
import type { Runner } from '../system/index.js'

export type NetworkMode = 'netns' | 'loopback'

/** What `mini down` needs to remove a network, even after `mini up` crashed half way. */
export interface NetworkRecord {
  mode: NetworkMode
  /** Short random id: names of namespaces and links, and the process marker. */
  id: string
  /** The /24's first three octets, e.g. "10.213.7". */
  prefix: string
}

export interface MiniNetwork extends NetworkRecord {
  /** Where the host's services (the metadata service) listen: `<prefix>.1`. */
  hostAddress: string
  /** Node n's address (n from 0): `<prefix>.<n + 2>`. */
  nodeAddress(index: number): string
  /** argv prefix that runs a program as node n (inside its namespace, or nothing). */
  execPrefix(index: number): string[]
  /** Creates node n's namespace and link (netns), or nothing. */
  addNode(index: number): Promise<void>
  /** Unplugs (false) or plugs back (true) node n's link; netns only. */
  setLink(index: number, up: boolean): Promise<void>
  /**
   * Node n as a virtual machine: a tap device on the bridge (created if need be) for its QEMU
   * (netns only: it needs root). Returns the tap's name.
   */
  addTap(index: number): Promise<string>
}

const namespaceName = (id: string, index: number) => `cst-${id}-${index}`
const bridgeName = (id: string) => `cst${id}br`
/** A locally administered unicast address from the cluster's id (6 hex digits). */
export const bridgeMac = (id: string) =>
  `02:c5:${(id.padStart(6, '0').slice(-6).match(/../g) ?? []).join(':')}:01`
/** Interface names are at most 15 bytes: "cst" + 6 + "h" + index. */
const hostLinkName = (id: string, index: number) => `cst${id}h${index}`
/** A VM's tap device: "cst" + 6 + "t" + index. */
export const tapName = (id: string, index: number) => `cst${id}t${index}`

/** A free /24 for a new cluster: random, and not on any interface of this host. */
export async function chooseNetwork(
  mode: NetworkMode,
  runner: Runner,
  random: () => number = Math.random,
): Promise<NetworkRecord> {
  const id = Math.floor(random() * 0xffffff)
    .toString(16)
    .padStart(6, '0')
  const used = mode === 'netns' ? (await runner.run('ip', ['-o', '-4', 'addr', 'show'])).stdout : ''
  for (let attempt = 0; attempt < 50; attempt++) {
    const [a, b] = [100 + Math.floor(random() * 150), Math.floor(random() * 256)]
    const prefix = mode === 'netns' ? `10.${a}.${b}` : `127.${a}.${b}`
    if (!used.includes(` ${prefix}.`)) return { mode, id, prefix }
  }
  throw new Error('no free /24 for the cluster network after 50 tries')
}

export function miniNetwork(record: NetworkRecord, runner: Runner): MiniNetwork {
  const ip = (...args: string[]) => runner.run('ip', args)
  const netns = record.mode === 'netns'
  return {
    ...record,
    hostAddress: `${record.prefix}.1`,
    nodeAddress: (index) => `${record.prefix}.${index + 2}`,
    execPrefix: (index) => (netns ? ['ip', 'netns', 'exec', namespaceName(record.id, index)] : []),
    async addNode(index) {
      if (!netns) return
      const ns = namespaceName(record.id, index)
      const hostEnd = hostLinkName(record.id, index)
      if (
        await runner.run('ip', ['link', 'show', bridgeName(record.id)]).then(
          () => false,
          () => true,
        )
      )
        await createBridge(record, runner)
      // two `ip -batch` runs, the host's side and the namespace's (a batch line cannot name a
      // namespace), instead of a process per command: each costs this process a spawn
      await ipBatch(runner, [
        `netns add ${ns}`,
        `link add ${hostEnd} type veth peer name eth0 netns ${ns}`,
        `link set ${hostEnd} master ${bridgeName(record.id)} up`,
      ])
      await ipBatch(
        runner,
        [`addr add ${record.prefix}.${index + 2}/24 dev eth0`, 'link set eth0 up', 'link set lo up'],
        ns,
      )
    },
    async setLink(index, up) {
      if (!netns) throw new Error('cutting a link needs network namespaces (run as root)')
      await ip('link', 'set', hostLinkName(record.id, index), up ? 'up' : 'down')
    },
    async addTap(index) {
      if (!netns) throw new Error('virtual machines need the bridged network (run as root)')
      const bridge = bridgeName(record.id)
      if (
        await runner.run('ip', ['link', 'show', bridge]).then(
          () => false,
          () => true,
        )
      )
        await createBridge(record, runner)
      const tap = tapName(record.id, index)
      await ip('tuntap', 'add', 'dev', tap, 'mode', 'tap')
      await ip('link', 'set', tap, 'master', bridge, 'up')
      return tap
    },
  }
}

async function createBridge(record: NetworkRecord, runner: Runner) {
  const bridge = bridgeName(record.id)
  // a set address is kept: otherwise the bridge takes its lowest port's, and a node added later
  // (mini add) could change it under every node's ARP cache, cutting them off for half a minute
  await ipBatch(runner, [
    `link add ${bridge} address ${bridgeMac(record.id)} type bridge`,
    `addr add ${record.prefix}.1/24 dev ${bridge}`,
    `link set ${bridge} up`,
  ])
}

/** `ip` commands in one process, in order; it stops at the first that fails (its stderr names the line). */
async function ipBatch(runner: Runner, commands: string[], namespace?: string): Promise<void> {
  await runner.run('ip', [...(namespace ? ['-n', namespace] : []), '-batch', '-'], {
    input: commands.map((c) => `${c}\n`).join(''),
  })
}

/** Removes node n's namespace and the host's end of its link (netns; nothing in loopback mode). */
export async function removeNodeNetwork(
  record: NetworkRecord,
  index: number,
  runner: Runner,
): Promise<string[]> {
  if (record.mode !== 'netns') return []
  const removed: string[] = []
  const link = hostLinkName(record.id, index)
  if (
    await runner.run('ip', ['link', 'show', link]).then(
      () => true,
      () => false,
    )
  ) {
    await runner.run('ip', ['link', 'delete', link])
    removed.push(`link ${link}`)
  }
  const ns = namespaceName(record.id, index)
  if ((await runner.run('ip', ['netns', 'list'])).stdout.split('\n').some((l) => l.split(' ')[0] === ns)) {
    await runner.run('ip', ['netns', 'delete', ns])
    removed.push(`network namespace ${ns}`)
  }
  return removed
}

/** Removes every namespace and link of this network that exists; what is already gone is fine. */
export async function removeNetwork(record: NetworkRecord, runner: Runner): Promise<string[]> {
  if (record.mode !== 'netns') return []
  const removed: string[] = []
  // the host's veth ends first: deleting a namespace removes its end only when the kernel gets to it
  const links = (await runner.run('ip', ['-o', 'link', 'show'])).stdout
  for (const name of links.matchAll(new RegExp(`^\\d+: (cst${record.id}[ht]\\d+)[@:]`, 'gm'))) {
    await runner.run('ip', ['link', 'delete', name[1]!])
    removed.push(`link ${name[1]!}`)
  }
  const namespaces = (await runner.run('ip', ['netns', 'list'])).stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`cst-${record.id}-`))
  for (const ns of namespaces) {
    await runner.run('ip', ['netns', 'delete', ns])
    removed.push(`network namespace ${ns}`)
  }
  const bridge = bridgeName(record.id)
  const hasBridge = await runner.run('ip', ['link', 'show', bridge]).then(
    () => true,
    () => false,
  )
  if (hasBridge) {
    await runner.run('ip', ['link', 'delete', bridge])
    removed.push(`bridge ${bridge}`)
  }
  return removed
}
