/**
 * `bootstrap run` once its parts are built, and what the node does after init or join: a rebooted
 * node starts its services (first serving a resume of an Init answer it kept); a fresh node serves
 * Init and its JoinClient, then starts the control-plane services, or, having failed past the node
 * lock, marks its state disk for reset so that the next boot starts it fresh.
 */
import { chainMessage, CliError } from '../errors/index.js'
import type { NodeRole } from '../nodeconfig/index.js'
import type { NodePaths } from '../paths.js'
import type { StateDiskMark } from '../statedisk/index.js'
import type { Logger, Runner } from '../system/index.js'
import { startControlPlaneServices } from './control-plane-services.js'
import type { Bootstrapper } from './daemon.js'
import { InitResultKeeper } from './init/init-result.js'
import { rebootedNodeState, startRebootedNode } from './rebooted-node.js'

/** The state disk's mark (statedisk's CryptsetupDisk). */
export interface ResettableDisk {
  readonly device: string
  writeMark(mark: StateDiskMark): Promise<void>
}

/** What runNode reads of the daemon once it was served. */
export interface ServedDaemon {
  readonly outcome: Bootstrapper['outcome']
}

export interface NodeRunDeps<D extends ServedDaemon = Bootstrapper> {
  paths: NodePaths
  /** This node's role in the metadata: a control plane that joined starts the control-plane services. */
  role: NodeRole
  runner: Runner
  log: Logger
  /** PCR 15 as the TPM reports it now. */
  readClusterIdPcr: () => Promise<Buffer | undefined>
  /** The daemon; with `kept` (an answer an earlier boot kept for a resume), one that serves resumes only. */
  createDaemon: (kept?: InitResultKeeper) => D
  /** Runs the daemon until it is done or stopped (serveUntilStopped in production). */
  serve: (daemon: D) => Promise<void>
  disk: ResettableDisk
}

export async function runNode<D extends ServedDaemon>(deps: NodeRunDeps<D>): Promise<void> {
  const { runner, log } = deps
  const rebooted = await rebootedNodeState(deps.readClusterIdPcr, deps.paths)
  if (rebooted) {
    const kept = await keptInitAnswer(deps.paths, log)
    if (!kept) return startRebootedNode(runner, rebooted, log)
    // This node's Init answer never reached anyone, and the node rebooted before a resume fetched
    // it. Its key service would take port 9000 (its default shares it with initServer.listen), so
    // it starts once the answer was handed over or the bootstrapper is stopped, as in the first boot.
    await startRebootedNode(runner, rebooted, log, { controlPlaneServices: false })
    await deps.serve(deps.createDaemon(kept))
    return startControlPlaneServices(runner, log)
  }
  const daemon = deps.createDaemon()
  await deps.serve(daemon)
  const controlPlane =
    daemon.outcome === 'initialized' || (daemon.outcome === 'joined' && deps.role === 'control-plane')
  if (controlPlane) await startControlPlaneServices(runner, log)
  if (daemon.outcome === 'failed' || daemon.outcome === 'join-failed') {
    await markForReset(deps.disk, log)
    const what = daemon.outcome === 'failed' ? 'init' : 'joining the cluster'
    throw new CliError(
      `${what} failed after the node lock was taken; this node cannot be used in this boot`,
      {
        hint: 'the log above says why; the state disk is marked for reset: the next boot formats it and the node starts fresh',
      },
    )
  }
}

/** The answer an earlier boot kept for a resume; one the node cannot read must not stop it from starting. */
async function keptInitAnswer(paths: NodePaths, log: Logger): Promise<InitResultKeeper | undefined> {
  try {
    return await InitResultKeeper.restore(paths)
  } catch (err) {
    log.error('The kept Init answer cannot be read; no resume can fetch it', { error: chainMessage(err) })
    return undefined
  }
}

/** Past the point of no return the node cannot be used again as it is: the next boot starts it fresh. */
async function markForReset(disk: ResettableDisk, log: Logger): Promise<void> {
  try {
    await disk.writeMark('reset')
    log.warn('State disk marked for reset: the next boot formats it', { device: disk.device })
  } catch (err) {
    log.error('Marking the state disk for reset failed; the next boot asks for its key instead', {
      device: disk.device,
      error: chainMessage(err),
    })
  }
}
