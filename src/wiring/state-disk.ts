/**
 * `state-disk setup` with its production parts: cryptsetup and blkid through the process runner,
 * device-mapper and mount(8) for the file system, the node's TPM and issuer for PCR 15, the rejoin
 * request and the recovery endpoint (both aTLS). Tests pass their own outside world to
 * buildStateDiskSetup; the mount is the boundary they replace.
 */
import { createAttestedServerCredentials } from '../lib/atls/index.js'
import type { Issuer } from '../lib/attestation/index.js'
import {
  attestedRejoinTicketRequester,
  CLUSTER_ID_PCR,
  setupStateDisk,
  nodeJoinEndpoints,
  type JoinRetrySettings,
  type RecoveryEndpoint,
  type RejoinTicketRequester,
  type SetupOutcome,
} from '../lib/bootstrapper/index.js'
import { routeGrpcLogs } from '../lib/grpc/index.js'
import {
  loadResolvedNodeConfig,
  type NodeConfig,
  type ResolvedNodeConfig,
  type ResolvedMetadata,
} from '../lib/nodeconfig/index.js'
import { simulatedMounter } from '../lib/simulator/index.js'
import { nodePaths } from '../lib/paths.js'
import {
  CryptsetupDisk,
  deviceMapperMounter,
  RecoveryServer,
  type StateDiskMounter,
} from '../lib/statedisk/index.js'
import {
  claimInterrupts,
  createLogger,
  createRunner,
  processSignalIo,
  SIGNAL_EXIT_CODES,
  type Logger,
  type Runner,
} from '../lib/system/index.js'
import { extendPcr, readPcrs, type OpenTpm } from '../lib/tpm/index.js'
import { nodeIssuer, openTpmFromConfig } from './node.js'

export type StateDiskNodeConfig = ResolvedNodeConfig &
  Required<Pick<NodeConfig, 'stateDisk'>> & { metadata: ResolvedMetadata }

export interface StateDiskIo {
  openTpm: OpenTpm
  runner: Runner
  mounter: StateDiskMounter
  requestRejoinTicket: RejoinTicketRequester
  /** The recovery endpoint around the node's check of an offered master secret. */
  recoveryEndpoint: (recover: (master: { key: Buffer; salt: Buffer }) => Promise<void>) => RecoveryEndpoint
  log: Logger
  retry?: JoinRetrySettings
  /**
   * Format new disks with dm-integrity (Constellation's format). Only a node that maps its disk
   * can: without device-mapper (mini, tests) cryptsetup cannot format integrity at all.
   */
  integrity?: boolean
}

export function buildStateDiskSetup(
  config: StateDiskNodeConfig,
  io: StateDiskIo,
  signal: AbortSignal,
): Promise<SetupOutcome> {
  const paths = nodePaths(config.root)
  return setupStateDisk({
    disk: new CryptsetupDisk(
      config.stateDisk.device,
      io.runner,
      paths.runtimeDir,
      config.stateDisk.pbkdf,
      io.integrity ?? false,
    ),
    mounter: io.mounter,
    paths,
    readClusterIdPcr: async () => (await readPcrs(io.openTpm, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR),
    tpm: { extendPcr: (index, digest) => extendPcr(io.openTpm, index, digest) },
    diskKey: {
      endpoints: nodeJoinEndpoints(config),
      requestRejoinTicket: io.requestRejoinTicket,
      recoveryEndpoint: io.recoveryEndpoint,
      retry: io.retry,
    },
    log: io.log,
    signal,
  })
}

/** The node's recovery endpoint on recoveryServer.listen, attested with the node's issuer. */
export function nodeRecoveryEndpoint(
  config: Pick<NodeConfig, 'recoveryServer'>,
  issuer: Issuer,
  log: Logger,
): StateDiskIo['recoveryEndpoint'] {
  return (recover) =>
    new RecoveryServer({
      listen: config.recoveryServer.listen,
      credentials: createAttestedServerCredentials({ issuer, log }),
      recover,
      log,
    })
}

/**
 * The production run: JSON logs to stderr (the journal); SIGINT/SIGTERM end a wait for the key.
 * `simulateMapping`: `mini`'s nodes, on a host without device-mapper (see simulated-mounter.ts).
 */
export async function runStateDiskSetup(
  configPath: string,
  opts: { simulateMapping?: boolean } = {},
): Promise<SetupOutcome> {
  const log = createLogger({
    format: 'json',
    write: (line) => process.stderr.write(line + '\n'),
    component: 'state-disk',
  })
  const config = (await loadResolvedNodeConfig(configPath, {
    require: ['stateDisk', 'metadata'],
    onMetadataRetry: (err, attempt, delayMs) =>
      log.warn('Metadata service not reachable yet; asking again', {
        attempt,
        delayMs,
        error: err instanceof Error ? err.message : String(err),
      }),
  })) as StateDiskNodeConfig
  routeGrpcLogs(log)
  if (opts.simulateMapping)
    log.warn(
      'State disk mapping SIMULATED (constellation mini): the key is checked, the disk is not mapped, and a new disk is formatted without dm-integrity (encrypted, not authenticated), which needs device-mapper',
    )
  const openTpm = openTpmFromConfig(config.tpm)
  const issuer = nodeIssuer(config, openTpm)
  const runner = createRunner()
  const stop = new AbortController()
  // claimed, so that the command's default answer to a signal (exit at once) waits for this one
  const release = claimInterrupts((signal) =>
    stop.signal.aborted
      ? processSignalIo().exit(SIGNAL_EXIT_CODES[signal])
      : stop.abort(new Error('state-disk setup was stopped')),
  )
  try {
    return await buildStateDiskSetup(
      config,
      {
        openTpm,
        runner,
        mounter: opts.simulateMapping
          ? simulatedMounter(runner, nodePaths(config.root))
          : deviceMapperMounter(runner, nodePaths(config.root)),
        // from the address the metadata lists for this node: the join service knows it by that address
        requestRejoinTicket: attestedRejoinTicketRequester(issuer, undefined, config.metadata.self.vpcIP),
        recoveryEndpoint: nodeRecoveryEndpoint(config, issuer, log),
        log,
        integrity: !opts.simulateMapping,
      },
      stop.signal,
    )
  } finally {
    release()
  }
}
