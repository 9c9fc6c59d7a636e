/**
 * A mini node's supervisor (its "systemd", src/lib/mini/supervisor.ts) with its production parts:
 * real processes in process groups of their own, swtpm on the node's socket, JSON logs on stderr
 * (mini points them at nodes/<node>/supervisor.log), the node's marker to find what units left.
 */
import { connect } from 'node:net'
import {
  NODE_MARKER,
  NodeSupervisor,
  SUPERVISOR_MARKER,
  SYSTEMCTL_SOCKET_ENV,
  killGroup,
  measureNodeBoot,
  readMachineSpec,
  spawnInGroup,
  standInEvidence,
  stopMarked,
} from '../lib/mini/index.js'
import { startConfigfsTsmStandIn } from '../lib/cvm-standin/index.js'
import { CliError } from '../lib/errors/index.js'
import { createLogger, serveUntilStopped, sleepMs } from '../lib/system/index.js'
import { openSwtpmSocket, shutdownTpm } from '../lib/tpm/index.js'

/** What a unit may leave behind gets this long after SIGTERM, as a unit's TimeoutStopSec. */
const SWEEP_GRACE_MS = 5_000

export async function runNodeSupervisor(machineFile: string, bootId: string): Promise<void> {
  const machine = await readMachineSpec(machineFile)
  const nodeMarker = process.env[NODE_MARKER]
  if (!nodeMarker)
    throw new CliError(`${NODE_MARKER} is not set: mini starts a node's supervisor with its node's marker`)
  // the marker that finds the supervisor is its own; its units carry the node's alone
  const env: NodeJS.ProcessEnv = { ...process.env, [SYSTEMCTL_SOCKET_ENV]: machine.control }
  delete env[SUPERVISOR_MARKER]
  const log = createLogger({ format: 'json', component: 'systemd', fields: { node: machine.node } })
  const supervisor = new NodeSupervisor(machine, {
    spawn: spawnInGroup,
    killGroup,
    sweep: (except) => stopMarked(NODE_MARKER, nodeMarker, SWEEP_GRACE_MS, except),
    tpmAccepts: (socket) =>
      new Promise((resolve) => {
        const s = connect({ path: socket }, () => {
          s.destroy()
          resolve(true)
        })
        s.once('error', () => resolve(false))
      }),
    shutdownTpm: (socket) => shutdownTpm(openSwtpmSocket(socket)),
    measureBoot: (boot, socket) => measureNodeBoot(openSwtpmSocket(socket), boot),
    startCvm: async (cvm) =>
      startConfigfsTsmStandIn({
        dir: cvm.tsmDir,
        provider: cvm.kind === 'snp' ? 'sev_guest' : 'tdx_guest',
        produce: await standInEvidence(cvm),
        log: log.child('cvm-standin'),
      }),
    sleep: (ms) => sleepMs(ms),
    env,
    log,
    bootId,
    pid: process.pid,
  })
  await serveUntilStopped(supervisor)
}
