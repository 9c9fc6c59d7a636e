/** The node bootstrapper daemon: refuses a bootstrapped node, serves Init until one Init took the node lock. */
import { Server, type ServerCredentials } from '@grpc/grpc-js'
import { APIService } from '../../gen/init.js'
import { prepareCertificateEncoder } from '../atls/index.js'
import { chainMessage, CliError } from '../errors/index.js'
import { listenOn } from '../grpc/index.js'
import type { NodeConfig } from '../nodeconfig/index.js'
import { nodePaths } from '../paths.js'
import type { Logger, Runner } from '../system/index.js'
import { extendPcr, readPcrs, type OpenTpm } from '../tpm/index.js'
import { CryptsetupDisk } from './disk.js'
import type { HttpGet } from './http-get.js'
import { InitHandler } from './init-server.js'
import { stageComponents, type InstallerDeps } from './installer.js'
import { runKubeadmInit } from './kubeadm.js'
import type { LogCollector } from './logs.js'
import { CLUSTER_ID_PCR, NodeLock } from './node-lock.js'

export interface BootstrapperIo {
  openTpm: OpenTpm
  runner: Runner
  /** Downloads Kubernetes components (httpGet in production). */
  httpGet: HttpGet
  /** Download retries and limits; the installer's defaults when absent. */
  downloads?: Pick<InstallerDeps, 'attempts' | 'initialDelayMs' | 'limits' | 'maxExtractedBytes'>
  logs: LogCollector
  log: Logger
  /** aTLS (server attested) in production; see createAttestedBootstrapperCredentials. */
  credentials: ServerCredentials
  /** The join side; it arrives with the join issue and competes with Init for the same node lock. */
  joinClient?: JoinClient
}

/** Runs beside the InitServer; whoever takes the node lock first proceeds, the other stops. */
export interface JoinClient {
  /** Resolves once it joined (after taking the lock) or was stopped. */
  start(lock: NodeLock): Promise<void>
  /** Idempotent; called when Init took the lock. */
  stop(): Promise<void>
}

/** Config keys bootstrap run cannot do without. */
export type BootstrapperConfig = NodeConfig &
  Required<Pick<NodeConfig, 'initSecretHash' | 'stateDisk' | 'metadata'>>

export class NodeBootstrappedError extends CliError {
  constructor(pcr: Buffer) {
    super(
      `this node was bootstrapped before (PCR ${CLUSTER_ID_PCR} is ${pcr.toString('hex')}, not zero); refusing to serve init or join`,
      { hint: 'a node is initialized or joins exactly once per boot; create a new node instead' },
    )
    this.name = 'NodeBootstrappedError'
  }
}

export class Bootstrapper {
  private server?: Server
  private stopping?: Promise<void>
  private nodeLocked = false
  private readonly lock: NodeLock
  private readonly handler: InitHandler
  private readonly disk: CryptsetupDisk
  /** Aborted by stop(): downloads in flight end, and no Init takes the lock afterwards. */
  private readonly stopSignal = new AbortController()
  private finished!: () => void
  /** Resolves once the server stopped: after the Init that took the node lock, or after stop(). */
  readonly done = new Promise<void>((resolve) => (this.finished = resolve))

  constructor(
    private readonly config: BootstrapperConfig,
    private readonly io: BootstrapperIo,
  ) {
    const paths = nodePaths(config.root)
    this.lock = new NodeLock({ extendPcr: (index, digest) => extendPcr(io.openTpm, index, digest) })
    const log = io.log.child('init-server')
    this.disk = new CryptsetupDisk(
      config.stateDisk.device,
      io.runner,
      paths.runtimeDir,
      config.stateDisk.pbkdf,
    )
    this.handler = new InitHandler(
      {
        initSecretHash: config.initSecretHash,
        nodeLock: this.lock,
        onLocked: () => {
          this.nodeLocked = true
          void io.joinClient?.stop()
        },
        disk: this.disk,
        initialKeyFile: config.stateDisk.initialKeyFile,
        paths,
        self: config.metadata.self,
        loadBalancerEndpoint: config.metadata.loadBalancerEndpoint,
        stageComponents: (components) =>
          stageComponents(components, {
            ...io.downloads,
            root: config.root,
            stagingDir: paths.componentStagingDir,
            get: io.httpGet,
            log: io.log.child('installer'),
            signal: this.stopSignal.signal,
          }),
        signal: this.stopSignal.signal,
        kubeadmInit: (input) =>
          runKubeadmInit(input, {
            runner: io.runner,
            kubeadm: config.kubeadm,
            paths,
            recordOutput: (text) => io.logs.append(text),
            log: io.log.child('kubeadm'),
          }),
        log,
      },
      io.logs,
      log,
    )
  }

  /** Checks PCR 15, then serves Init; resolves with the bound address. */
  async start(): Promise<string> {
    const pcr = (await readPcrs(this.io.openTpm, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR)
    if (!pcr) throw new Error(`the TPM returned no value for PCR ${CLUSTER_ID_PCR}`)
    if (pcr.some((b) => b !== 0)) throw new NodeBootstrappedError(pcr)
    const server = new Server({ 'grpc.keepalive_time_ms': 15_000 })
    server.addService(APIService, {
      init: (call: Parameters<InitHandler['init']>[0]) => {
        this.handler.init(call)
        // After the Init that took the lock the node is committed: stop serving once it answered.
        void this.handler.settled().then(() => (this.nodeLocked ? this.stop() : undefined))
      },
    })
    const address = await listenOn(
      server,
      this.config.initServer.listen,
      this.io.credentials,
      'initServer.listen',
    )
    this.server = server
    if (this.stopping) {
      server.forceShutdown() // stopped while starting
      return address
    }
    // A join that took the lock ends this node's init service.
    void this.io.joinClient
      ?.start(this.lock)
      .then(() => (this.lock.isLocked && !this.nodeLocked ? this.stop() : undefined))
    this.io.log.info('Init server listening', { address })
    // The first handshake needs the certificate encoder; prepare it now rather than while an operator waits.
    void prepareCertificateEncoder().catch(() => {}) // a failure surfaces in that handshake
    // Likewise the disk UUID: read now, so that init need not wait for it, and so that a wrong
    // stateDisk shows in the log before an operator runs init (Init reads it again and fails then).
    void this.disk.uuid().catch((err: unknown) =>
      this.io.log.warn('Cannot read the state disk; Init will fail until it can', {
        device: this.config.stateDisk.device,
        error: chainMessage(err),
      }),
    )
    return address
  }

  /** 'initialized' after init_success; 'failed' when an Init took the lock and then failed (the node is unusable). */
  get outcome(): 'initialized' | 'failed' | 'joined' | 'stopped' {
    if (this.handler.succeeded) return 'initialized'
    if (this.nodeLocked) return 'failed'
    return this.lock.isLocked ? 'joined' : 'stopped'
  }

  /**
   * Stops: downloads in flight are aborted (their Init fails before the lock); an Init past the lock
   * gets graceMs to answer, then the server is force-stopped. Idempotent; always resolves.
   */
  stop(graceMs = 10_000): Promise<void> {
    this.stopping ??= (async () => {
      this.stopSignal.abort(new Error('the node bootstrapper is stopping'))
      const server = this.server
      if (server) {
        if (!(await settledWithin(this.handler.settled(), graceMs))) server.forceShutdown()
        await this.io.joinClient?.stop()
        await new Promise<void>((resolve) => server.tryShutdown(() => resolve()))
      }
      this.finished()
    })()
    return this.stopping
  }
}

/** True when `work` settled within `ms`; the timer never keeps the process alive. */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  try {
    return await Promise.race([work.then(() => true), timeout])
  } finally {
    clearTimeout(timer)
  }
}
