/**
 * `bootstrap run` with its production parts: the TPM the node config names, cryptsetup and kubeadm
 * through the process runner, node:http(s) downloads, JSON logs to stderr, aTLS with the node's
 * issuer for Init and for the JoinClient. Shared by the oclif command (src/commands/bootstrap/run.ts)
 * and src/bootstrap-run.ts.
 */
import type { Issuer } from '../lib/attestation/index.js'
import { createAttestedServerCredentials } from '../lib/atls/index.js'
import {
  attestedJoinTicketRequester,
  AttestedKeys,
  Bootstrapper,
  CLUSTER_ID_PCR,
  type InitResultKeeper,
  LogCollector,
  NodeJoinClient,
  NodeLock,
  recordingIssuer,
  runKubeadmInit,
  runKubeadmJoin,
  runNode,
  stageComponents,
  nodeJoinEndpoints,
  type BootstrapperConfig,
  type InstallerDeps,
  type JoinClient,
  type JoinClientDeps,
  type JoinRetrySettings,
  type JoinTicketRequester,
} from '../lib/bootstrapper/index.js'
import { routeGrpcLogs } from '../lib/grpc/index.js'
import { loadBootstrapperNodeConfig } from '../lib/nodeconfig/index.js'
import { nodePaths, type NodePaths } from '../lib/paths.js'
import { CryptsetupDisk } from '../lib/statedisk/index.js'
import {
  createLogger,
  createRunner,
  httpGet,
  runnerWithSignal,
  serveUntilStopped,
  type HttpGet,
  type Logger,
  type Runner,
} from '../lib/system/index.js'
import { extendPcr, readPcrs, type OpenTpm } from '../lib/tpm/index.js'
import { nodeIssuer, openTpmFromConfig } from './node.js'

/** The node's outside world; tests pass a swtpm, a spying runner, their own downloads. */
export interface BootstrapperIo {
  openTpm: OpenTpm
  runner: Runner
  /** Downloads Kubernetes components (httpGet in production). */
  httpGet: HttpGet
  /** Download retries and limits; the installer's defaults when absent. */
  downloads?: Pick<InstallerDeps, 'attempts' | 'initialDelayMs' | 'limits' | 'maxExtractedBytes'>
  logs: LogCollector
  log: Logger
  /** The node's issuer (nodeIssuer in production): the init server's aTLS attests with it. */
  issuer: Issuer
  /** The JoinClient's way to the join services (aTLS with the node's issuer); no JoinClient without it. */
  join?: { requestTicket: JoinTicketRequester; retry?: JoinRetrySettings }
  /** Replaces the JoinClient built from `join` (tests of the daemon's lock race). */
  joinClient?: JoinClient
}

/**
 * Builds the daemon's lock, disk, installer and kubeadm from the config and the node's outside
 * world. With `kept` (an answer an earlier run kept for a resume) the daemon serves resumes only.
 */
export function buildBootstrapper(
  config: BootstrapperConfig,
  io: BootstrapperIo,
  kept?: InitResultKeeper,
  paths: NodePaths = nodePaths(config.root),
): Bootstrapper {
  // every key the init server attests, so that a resume proof is accepted only for one of them
  const attestedKeys = new AttestedKeys()
  const disk = new CryptsetupDisk(
    config.stateDisk.device,
    io.runner,
    paths.runtimeDir,
    config.stateDisk.pbkdf,
  )
  const installer: JoinClientDeps['stageComponents'] = (components, signal) =>
    stageComponents(components, {
      ...io.downloads,
      root: config.root,
      stagingDir: paths.componentStagingDir,
      get: io.httpGet,
      log: io.log.child('installer'),
      signal,
    })
  return new Bootstrapper(config, {
    paths,
    readClusterIdPcr: async () => (await readPcrs(io.openTpm, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR),
    lock: new NodeLock({ extendPcr: (index, digest) => extendPcr(io.openTpm, index, digest) }),
    disk,
    installer,
    kubeadm: (input, signal) =>
      runKubeadmInit(input, {
        runner: runnerWithSignal(io.runner, signal),
        kubeadm: config.kubeadm,
        paths,
        recordOutput: (text) => io.logs.append(text),
        log: io.log.child('kubeadm'),
      }),
    logs: io.logs,
    log: io.log,
    credentials: createAttestedServerCredentials({
      issuer: recordingIssuer(io.issuer, attestedKeys),
      log: io.log,
    }),
    attestedKeys,
    kept,
    joinClient:
      io.joinClient ?? (io.join && buildJoinClient(config, io, io.join, { paths, disk, installer })),
  })
}

/** The JoinClient on the same disk, installer and kubeadm as Init: whichever takes the lock uses them. */
function buildJoinClient(
  config: BootstrapperConfig,
  io: BootstrapperIo,
  join: NonNullable<BootstrapperIo['join']>,
  shared: { paths: NodePaths; disk: CryptsetupDisk; installer: JoinClientDeps['stageComponents'] },
): JoinClient {
  return new NodeJoinClient({
    self: config.metadata.self,
    endpoints: nodeJoinEndpoints(config),
    loadBalancerEndpoint: config.metadata.loadBalancerEndpoint,
    requestTicket: join.requestTicket,
    disk: shared.disk,
    paths: shared.paths,
    stageComponents: shared.installer,
    kubeadmJoin: (input, signal) =>
      runKubeadmJoin(input, {
        runner: io.runner,
        kubeadm: config.kubeadm,
        paths: shared.paths,
        recordOutput: (text) => io.logs.append(text),
        log: io.log.child('kubeadm'),
        signal,
      }),
    log: io.log,
    retry: join.retry,
  })
}

/** The production daemon: the TPM the config names, real processes and downloads, aTLS with the node's issuer. */
export function createNodeBootstrapper(
  config: BootstrapperConfig,
  logs: LogCollector,
  log: Logger,
  kept?: InitResultKeeper,
  paths: NodePaths = nodePaths(config.root),
): Bootstrapper {
  const openTpm = openTpmFromConfig(config.tpm)
  const issuer = nodeIssuer(config, openTpm)
  return buildBootstrapper(
    config,
    {
      openTpm,
      runner: createRunner(),
      httpGet,
      logs,
      log,
      issuer,
      // from the address the metadata lists for this node: the join service knows it by that address
      join: { requestTicket: attestedJoinTicketRequester(issuer, undefined, config.metadata.self.vpcIP) },
    },
    kept,
    paths,
  )
}

/** `bootstrap run` itself: load the node config, serve until the node is initialized (or stopped). */
export async function runBootstrapService(configPath: string): Promise<void> {
  const config = await loadBootstrapperNodeConfig(configPath)
  const paths = nodePaths(config.root)
  // every line goes to stderr (journald) and to the node's log, which a failed Init's caller may get
  const logs = new LogCollector((line) => process.stderr.write(line + '\n'))
  const log = createLogger({ format: 'json', write: logs.write, component: 'bootstrapper' })
  routeGrpcLogs(log)
  const openTpm = openTpmFromConfig(config.tpm)
  const runner = createRunner()
  await runNode({
    paths,
    role: config.metadata.self.role,
    runner,
    log,
    readClusterIdPcr: async () => (await readPcrs(openTpm, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR),
    createDaemon: (kept) => createNodeBootstrapper(config, logs, log, kept, paths),
    serve: (daemon) => serveUntilStopped(daemon),
    disk: new CryptsetupDisk(config.stateDisk.device, runner, paths.runtimeDir),
  })
}
