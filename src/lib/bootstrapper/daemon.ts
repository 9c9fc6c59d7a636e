/**
 * The node bootstrapper daemon: refuses a bootstrapped node, serves Init until one Init took the
 * node lock and its answer reached a caller (the one who sent it, or a resume).
 */
import { Server, type ServerCredentials } from '@grpc/grpc-js'
import { APIService } from '../../gen/init.js'
import { chainMessage, CliError } from '../errors/index.js'
import { boundedServerOptions, listenBounded, type BoundedListener } from '../grpc/index.js'
import type { NodeConfig, ResolvedMetadata } from '../nodeconfig/index.js'
import type { NodePaths } from '../paths.js'
import type { RecoveryLimits } from '../statedisk/index.js'
import { settledWithin, type Logger } from '../system/index.js'
import { AttestedKeys } from './init/attested-keys.js'
import type { AttestedKeySet } from './init/resume.js'
import type { StateDisk } from './init/init-node.js'
import { InitResultKeeper } from './init/init-result.js'
import { InitHandler } from './init/init-server.js'
import { prepareInitPath } from './init/warm-up.js'
import type { Component, StagedComponents } from './components/installer.js'
import type { KubeadmInitInput } from './kubeadm/kubeadm-config.js'
import type { LogCollector } from './logs.js'
import { CLUSTER_ID_PCR, type NodeLock } from './node-lock.js'

/**
 * What the daemon works with, built by the composition root (src/wiring/bootstrapper.ts), as
 * Constellation's initserver.New receives its lock, disk and kube installer.
 */
export interface BootstrapperParts {
  paths: NodePaths
  /** PCR 15 as the TPM reports it; anything but zeros means the node was bootstrapped before. */
  readClusterIdPcr: () => Promise<Buffer | undefined>
  lock: NodeLock
  disk: StateDisk
  /** Checks, downloads and unpacks components before the lock (stageComponents); `signal` ends downloads. */
  installer: (components: readonly Component[], signal: AbortSignal) => Promise<StagedComponents>
  /** Runs kubeadm init and returns the admin kubeconfig (runKubeadmInit); `signal` stops it. */
  kubeadm: (input: KubeadmInitInput, signal: AbortSignal) => Promise<Buffer>
  logs: LogCollector
  log: Logger
  /** aTLS (server attested) in production, its issuer wrapped by recordingIssuer(…, attestedKeys). */
  credentials: ServerCredentials
  /** The certificate keys `credentials` attested: a resume proof must be bound to one. None: no resume passes. */
  attestedKeys?: AttestedKeySet
  /**
   * The answer an earlier run of the bootstrapper kept for a resume (InitResultKeeper.restore): the
   * node is initialized already, and the daemon serves only resumes, until one received it.
   */
  kept?: InitResultKeeper
  /** Resumes checked at once and the backoff per address after a wrong secret (RESUME_LIMITS by default). */
  resumeLimits?: RecoveryLimits
  /** The join side; it arrives with the join issue and competes with Init for the same node lock. */
  joinClient?: JoinClient
}

/** Runs beside the InitServer; whoever takes the node lock first proceeds, the other stops. */
export interface JoinClient {
  /**
   * Resolves once it joined (after taking the lock), was stopped, or found the lock taken by Init;
   * rejects when the join failed after it took the lock (the node is unusable). Calls `onLocked`
   * right after it took the lock, so that the InitServer stops.
   */
  start(lock: NodeLock, onLocked: () => void): Promise<void>
  /** Idempotent; called when Init took the lock, and when the daemon stops. */
  stop(): Promise<void>
}

/** How long an Init past the node lock may take to answer once the daemon stops. */
const STOP_GRACE_MS = 10_000

/** Config keys bootstrap run cannot do without. */
export type BootstrapperConfig = NodeConfig &
  Required<Pick<NodeConfig, 'initSecretHash' | 'stateDisk'>> & { metadata: ResolvedMetadata }

/** The part of the node config the daemon itself reads; the rest went into its parts. */
export type BootstrapperSettings = Pick<
  BootstrapperConfig,
  'initServer' | 'initSecretHash' | 'stateDisk' | 'metadata'
>

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
  private listener?: BoundedListener
  private stopping?: Promise<void>
  private serverStopping?: Promise<void>
  /** An Init took the node lock. */
  private nodeLocked = false
  /**
   * The join took the node lock. Told by the join's own callback, never by the lock's flag: the flag
   * flips before PCR 15 is extended, so while an Init's extend runs, the lock looks taken and
   * nodeLocked is still false (a join client that looked then once stopped this Init's server).
   */
  private joinLocked = false
  /** The join took the node lock and then failed. */
  private joinFailed = false
  private readonly handler: InitHandler
  /** Aborted by stop(): downloads in flight end, and no Init takes the lock afterwards. */
  private readonly stopSignal = new AbortController()
  private finished!: () => void
  /** Resolves once the server stopped: after the Init that took the node lock, or after stop(). */
  readonly done = new Promise<void>((resolve) => (this.finished = resolve))

  constructor(
    private readonly config: BootstrapperSettings,
    private readonly parts: BootstrapperParts,
  ) {
    this.nodeLocked = parts.kept !== undefined
    const log = parts.log.child('init-server')
    this.handler = new InitHandler(
      {
        initSecretHash: config.initSecretHash,
        nodeLock: parts.lock,
        onLocked: () => {
          this.nodeLocked = true
          void parts.joinClient?.stop()
        },
        disk: parts.disk,
        paths: parts.paths,
        self: config.metadata.self,
        loadBalancerEndpoint: config.metadata.loadBalancerEndpoint,
        stageComponents: (components) => parts.installer(components, this.stopSignal.signal),
        signal: this.stopSignal.signal,
        kubeadmInit: parts.kubeadm,
        log,
      },
      parts.logs,
      log,
      {
        attestedKeys: parts.attestedKeys ?? new AttestedKeys(),
        keeper: parts.kept ?? new InitResultKeeper(parts.paths),
        resumeLimits: parts.resumeLimits,
      },
    )
  }

  /**
   * Checks PCR 15, then serves Init; resolves with the bound address. With a kept answer (`kept`)
   * the node is initialized already: it serves resumes only, and no join.
   */
  async start(): Promise<string> {
    if (!this.parts.kept) {
      const pcr = await this.parts.readClusterIdPcr()
      if (!pcr) throw new Error(`the TPM returned no value for PCR ${CLUSTER_ID_PCR}`)
      if (pcr.some((b) => b !== 0)) throw new NodeBootstrappedError(pcr)
    }
    // The server may live on after init, until a resume fetched a kept answer: it bounds what an
    // unauthenticated peer can hold, as every long-lived server here does.
    const server = new Server({ 'grpc.keepalive_time_ms': 15_000, ...boundedServerOptions() })
    server.addService(APIService, {
      init: (call: Parameters<InitHandler['init']>[0]) => {
        this.handler.init(call)
        // After the Init that took the lock the node is committed: stop serving once its answer
        // reached a caller (or it failed). An answer nobody received is served to a resume first.
        void this.handler
          .settled()
          .then(() => (this.nodeLocked && this.handler.finished ? this.stop() : undefined))
      },
    })
    const listener = await listenBounded(
      server,
      this.config.initServer.listen,
      this.parts.credentials,
      'initServer.listen',
      { log: this.parts.log.child('init-server') },
    )
    this.server = server
    this.listener = listener
    const address = listener.address
    if (this.stopping) {
      server.forceShutdown() // stopped while starting
      listener.destroy()
      return address
    }
    if (this.parts.kept) {
      this.parts.log.info('Serving resumes: an Init answer nobody received is kept on this node', { address })
      return address
    }
    // A join that took the lock ends this node's init service at once, and the daemon once it is done.
    void this.parts.joinClient
      ?.start(this.parts.lock, () => {
        this.joinLocked = true
        this.parts.log.info('A join took the node lock; the init server stops')
        void this.stopInitServer(STOP_GRACE_MS)
      })
      .then(
        () => (this.joinLocked ? this.stop() : undefined),
        (err: unknown) => {
          this.joinFailed = this.joinLocked
          this.parts.log.error('The join client failed', { error: chainMessage(err) })
          return this.stop()
        },
      )
    this.parts.log.info('Init server listening', { address })
    // The first Init's cold code (the certificate encoder, bcrypt…) runs now rather than while an
    // operator waits; a failure surfaces in that Init.
    void prepareInitPath(this.parts.paths).catch(() => {})
    // Likewise the disk UUID: read now, so that init need not wait for it, and so that a wrong
    // stateDisk shows in the log before an operator runs init (Init reads it again and fails then).
    void this.parts.disk.uuid().catch((err: unknown) =>
      this.parts.log.warn('Cannot read the state disk; Init will fail until it can', {
        device: this.config.stateDisk.device,
        error: chainMessage(err),
      }),
    )
    return address
  }

  /**
   * 'initialized' after init_success; 'failed' when an Init took the lock and then failed, 'join-failed'
   * when a join did (either way the node is unusable).
   */
  get outcome(): 'initialized' | 'failed' | 'joined' | 'join-failed' | 'stopped' {
    if (this.handler.succeeded) return 'initialized'
    if (this.nodeLocked) return 'failed'
    if (this.joinFailed) return 'join-failed'
    return this.parts.lock.isLocked ? 'joined' : 'stopped'
  }

  /**
   * Stops: downloads in flight are aborted (their Init fails before the lock); an Init past the lock
   * gets graceMs to answer, then the server is force-stopped. Idempotent; always resolves.
   */
  stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      const server = this.stopInitServer(graceMs)
      if (this.server) await this.parts.joinClient?.stop()
      await server
      this.finished()
    })()
    return this.stopping
  }

  /** Ends Init: downloads in flight abort, an Init past the lock gets graceMs to answer. Idempotent. */
  private stopInitServer(graceMs: number): Promise<void> {
    this.serverStopping ??= (async () => {
      this.stopSignal.abort(new Error('the node bootstrapper is stopping'))
      const server = this.server
      if (!server) return
      this.listener?.close()
      if (!(await settledWithin(this.handler.settled(), graceMs))) server.forceShutdown()
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()))
      this.listener?.destroy() // handshakes grpc-js never saw
    })()
    return this.serverStopping
  }
}
