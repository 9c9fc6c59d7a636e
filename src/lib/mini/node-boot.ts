/**
 * One node of a local cluster, booted as a machine image would boot it: its TPM (swtpm) comes up,
 * systemd runs `state-disk setup`, then `bootstrap run` and the verification service. Control
 * planes' key and join services are started by `bootstrap run` itself through systemctl (the
 * simulator's systemctl, over the project's real unit files).
 */
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { open } from 'node:fs/promises'
import path from 'node:path'
import type { AttestationVariant } from '../attestation/index.js'
import type { NodeConfig } from '../nodeconfig/index.js'
import { nodePaths } from '../paths.js'
import type { Runner } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { CLUSTER_MARKER, NODE_MARKER, startDaemon, stopMarked, type Daemon } from './daemons.js'
import { METADATA_PORT, NODE_PORTS, type MiniNodeFiles, type MiniNodeRecord } from './layout.js'
import type { MiniNetwork } from './network.js'
import { kubeletUnitFor } from './simulator/index.js'
import { waitForExit } from './wait.js'

/** Big enough for a LUKS2 header (16 MiB) and its tokens; nothing is written past it (no mapping). */
const DISK_BYTES = 32 * 1024 * 1024

export interface NodeBootContext {
  network: MiniNetwork
  runner: Runner
  /** argv that runs this CLI (node + bin/run.js). */
  cli: readonly string[]
  /** The project's systemd unit templates and the simulator's kubelet unit. */
  unitTemplates: string
  kubeletUnit: string
  /** The environment every node process gets (markers, the simulator's variables, PATH). */
  env: NodeJS.ProcessEnv
  attestation: MiniAttestation
}

/** How the cluster's nodes attest; tpm-ek's join services check EK certificates against `roots`. */
export type MiniAttestation = { variant: 'qemu-vtpm' } | { variant: 'tpm-ek'; roots: string[] }

export function miniAttestation(variant: AttestationVariant, issuerCert: string): MiniAttestation {
  return variant === 'tpm-ek' ? { variant, roots: [issuerCert] } : { variant }
}

export interface BootedNode {
  /** `bootstrap run`: exits 0 once initialized, joined, or (after a reboot) started as before. */
  bootstrap: Daemon
}

export const nodeMarker = (clusterId: string, node: string) => `${clusterId}/${node}`

/** The node config mini gives node `n`: its address for every service, metadata from the host. */
export function miniNodeConfig(
  network: MiniNetwork,
  node: MiniNodeRecord,
  files: MiniNodeFiles,
  attestation: MiniAttestation = { variant: 'qemu-vtpm' },
): NodeConfig {
  const at = (port: number) => `${node.address}:${port}`
  return {
    attestationVariant: attestation.variant,
    ...(attestation.variant === 'tpm-ek' && { attestation: { tpmEK: { roots: attestation.roots } } }),
    // the node's alone: a port on a loopback address would let every user of the host in
    tpm: { swtpm: `unix:${files.sockets.swtpm}` },
    root: files.root,
    initServer: { listen: at(NODE_PORTS.init) },
    verifyService: { listen: at(NODE_PORTS.verify) },
    joinService: { listen: at(NODE_PORTS.join) },
    keyService: { listen: `unix:${files.sockets.keyService}` },
    recoveryServer: { listen: at(NODE_PORTS.recovery) },
    kubeconfig: path.join(files.root, 'etc/kubernetes/admin.conf'),
    kubeadm: path.join(files.root, 'run/state/bin/kubeadm'),
    // the derived key's keyslot: PBKDF2 at its floor keeps a boot fast; a real node keeps argon2id
    stateDisk: { device: files.disk, pbkdf: { type: 'pbkdf2', iterations: 1000 } },
    metadata: {
      provider: 'http',
      url: `http://${network.hostAddress}:${METADATA_PORT}`,
      ...(network.mode === 'loopback' ? { sourceAddress: node.address } : {}),
    },
  }
}

/** A new machine: its folders, an empty disk image, its config and its systemd units. */
export async function provisionNode(
  ctx: NodeBootContext,
  node: MiniNodeRecord,
  files: MiniNodeFiles,
): Promise<void> {
  for (const dir of [files.root, files.tpmState, files.units, files.unitState])
    await mkdir(dir, { recursive: true, mode: 0o700 })
  const disk = await open(files.disk, 'wx', 0o600)
  await disk.truncate(DISK_BYTES)
  await disk.close()
  await writeFile(files.config, stringifyYaml(miniNodeConfig(ctx.network, node, files, ctx.attestation)), {
    mode: 0o600,
  })
  await renderUnits(ctx, files)
}

/** The project's units with this node's CLI, config and root, as the image would install them. */
async function renderUnits(ctx: NodeBootContext, files: MiniNodeFiles): Promise<void> {
  const launcher = path.join(files.dir, 'constellation')
  await writeFile(launcher, `#!/bin/sh\nexec ${ctx.cli.map((a) => `'${a}'`).join(' ')} "$@"\n`)
  await chmod(launcher, 0o755)
  for (const unit of await readdir(ctx.unitTemplates)) {
    const text = (await readFile(path.join(ctx.unitTemplates, unit), 'utf8'))
      .replaceAll('/usr/bin/constellation', launcher)
      .replaceAll('/etc/constellation/node-config.yaml', files.config)
      .replaceAll('/var/config/', path.join(files.root, 'var/config') + '/')
    await writeFile(path.join(files.units, unit), text)
  }
  await writeFile(
    path.join(files.units, 'kubelet.service'),
    await kubeletUnitFor(ctx.kubeletUnit, files.root),
  )
}

/** Powers the node on: TPM, state disk, then `bootstrap run` and the verification service. */
export async function bootNode(
  ctx: NodeBootContext,
  node: MiniNodeRecord,
  files: MiniNodeFiles,
  clusterId: string,
  wait: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<BootedNode> {
  const prefix = ctx.network.execPrefix(node.index)
  const env: NodeJS.ProcessEnv = {
    ...ctx.env,
    [CLUSTER_MARKER]: clusterId,
    [NODE_MARKER]: nodeMarker(clusterId, node.name),
    SYSTEMCTL_FAKE_UNIT_DIR: files.units,
    SYSTEMCTL_FAKE_STATE_DIR: files.unitState,
  }
  // --daemon: swtpm forks once its sockets listen, so the TPM is there when this resolves; it
  // replaces a socket a killed swtpm left behind
  const [swtpm = 'swtpm', ...swtpmArgs] = [
    ...prefix,
    'swtpm',
    'socket',
    '--tpm2',
    '--daemon',
    '--server',
    `type=unixio,path=${files.sockets.swtpm},mode=0600`,
    '--ctrl',
    `type=unixio,path=${files.sockets.swtpmCtrl},mode=0600`,
    '--tpmstate',
    `dir=${files.tpmState}`,
    '--log',
    `file=${files.log('swtpm')}`,
    '--flags',
    'not-need-init,startup-clear',
  ]
  await ctx.runner.run(swtpm, swtpmArgs, { env })
  const cli = (...args: string[]) => [...prefix, ...ctx.cli, ...args]
  const setup = startDaemon({
    argv: cli('state-disk', 'setup', '--config', files.config, '--simulate-mapping'),
    env,
    awaited: true,
    logFile: files.log('state-disk'),
  })
  await waitForExit(setup, {
    what: `${node.name}'s state-disk setup`,
    log: files.log('state-disk'),
    timeoutMs: wait.timeoutMs ?? 300_000,
    signal: wait.signal,
  })
  startDaemon({
    argv: cli('verifyservice', '--config', files.config),
    env,
    logFile: files.log('verifyservice'),
  })
  const bootstrap = startDaemon({
    argv: cli('bootstrap', 'run', '--config', files.config),
    env,
    awaited: true,
    logFile: files.log('bootstrap'),
  })
  return { bootstrap }
}

/**
 * Powers the node off: every process of it stops (TPM included), and its memory-backed /run is
 * gone. The disk image, the TPM's persistent state and what the state disk holds stay.
 */
export async function powerOffNode(clusterId: string, node: string, files: MiniNodeFiles): Promise<void> {
  await stopMarked(NODE_MARKER, nodeMarker(clusterId, node))
  const paths = nodePaths(files.root)
  await rm(paths.runtimeDir, { recursive: true, force: true })
  await rm(path.dirname(paths.stateDiskInitialKeyFile), { recursive: true, force: true })
  for (const f of await readdir(files.unitState).catch(() => []))
    if (f.endsWith('.pid')) await rm(path.join(files.unitState, f), { force: true })
}
