/**
 * The JoinClient beside the InitServer (Constellation's joinclient): asks the cluster's join
 * services for a ticket with an attestation of this node, until one answers; then joins, unless
 * Init took the node lock first. A refused attestation is logged with its reason and asked again:
 * the operator may update the measurements meanwhile.
 */
import type { KeyObject } from 'node:crypto'
import { chainMessage } from '../../errors/index.js'
import { kubernetesNodeName, type NodeMember } from '../../nodeconfig/index.js'
import type { NodePaths } from '../../paths.js'
import { retry, type Logger, type RetryOptions } from '../../system/index.js'
import type { JoinClient } from '../daemon.js'
import type { StateDisk } from '../init/init-node.js'
import type { Component, StagedComponents } from '../components/installer.js'
import type { KubeadmJoinInput } from '../kubeadm/kubeadm-join-config.js'
import { JoinFailedError, joinNode, type JoinPlan } from './join-node.js'
import { checkJoinTicket } from './join-ticket.js'
import { isRefusedConnection, JoinRoundsLog, type JoinTicketRequester } from './join-ticket-request.js'
import type { NodeLock } from '../node-lock.js'

export interface JoinRetrySettings {
  initialDelayMs: number
  maxDelayMs: number
  /** ±fraction of each delay, so that nodes that failed together do not ask again together. */
  jitter: number
  /** The wait while no join service listens at all (every endpoint refused the connection). */
  steadyDelayMs?: number
  /** The wait between rounds (tests count the waits instead of waiting). */
  sleep?: RetryOptions['sleep']
}

/**
 * Constellation asks every 30 s; a fresh node asks sooner at first, as the cluster may just be up.
 * While nothing listens it asks four times a second: a refused connection costs the other side a
 * reset, and the node joins within a quarter second of its join service's start.
 */
export const DEFAULT_JOIN_RETRY: JoinRetrySettings = {
  initialDelayMs: 1_000,
  maxDelayMs: 30_000,
  jitter: 0.2,
  steadyDelayMs: 250,
}

export interface JoinClientDeps {
  self: NodeMember
  /** HOST:PORT of every join service to try, in order (staticJoinEndpoints). */
  endpoints: readonly string[]
  loadBalancerEndpoint?: string
  requestTicket: JoinTicketRequester
  disk: StateDisk
  paths: NodePaths
  /** Checks, downloads and verifies the ticket's components before the lock (stageComponents). */
  stageComponents: (components: readonly Component[], signal: AbortSignal) => Promise<StagedComponents>
  kubeadmJoin: (input: KubeadmJoinInput, signal: AbortSignal) => Promise<void>
  log: Logger
  retry?: JoinRetrySettings
}

/** No join service gave this node a usable ticket in this round; the next round asks again. */
class NoTicketError extends Error {
  constructor(
    readonly reasons: string[],
    /** Every endpoint refused the connection: no join service runs yet (the cluster is not initialized). */
    readonly nothingListens: boolean,
  ) {
    super(`no join service gave this node a ticket: ${reasons.join('; ')}`)
    this.name = 'NoTicketError'
  }
}

const isNothingListening = (err: unknown): boolean => err instanceof NoTicketError && err.nothingListens

export class NodeJoinClient implements JoinClient {
  private readonly stopSignal = new AbortController()
  private running?: Promise<void>
  private readonly log: Logger
  private readonly rounds: JoinRoundsLog
  /** The key and CSR of a request whose connection was refused: nothing of them left the node. */
  private unsentCsr?: { publicKey: KeyObject; privateKey: KeyObject; certificateRequest: Buffer }

  constructor(private readonly deps: JoinClientDeps) {
    this.log = deps.log.child('join-client')
    this.rounds = new JoinRoundsLog(this.log, 'No usable join ticket from this join service')
  }

  /** Resolves once joined, stopped, or Init took the lock; rejects when the join failed past the lock. */
  start(lock: NodeLock, onLocked: () => void): Promise<void> {
    this.running ??= this.run(lock, onLocked)
    return this.running
  }

  /** Ends the asking (and a kubeadm join in flight); resolves once the client is done. Idempotent. */
  async stop(): Promise<void> {
    this.stopSignal.abort(new Error('the join client is stopping'))
    await this.running?.catch(() => {})
  }

  private async run(lock: NodeLock, onLocked: () => void): Promise<void> {
    const { endpoints } = this.deps
    const signal = this.stopSignal.signal
    if (endpoints.length === 0) {
      this.log.info('No join service to ask: the metadata names no control-plane peer and no load balancer')
      return
    }
    const settings = this.deps.retry ?? DEFAULT_JOIN_RETRY
    this.log.info('Asking for a join ticket', { endpoints })
    try {
      const joined = await retry(() => this.attempt(lock, onLocked), {
        attempts: Number.POSITIVE_INFINITY,
        ...settings,
        retryable: (err) => !(err instanceof JoinFailedError),
        steady: isNothingListening,
        signal,
        // each join service's answer is logged already; anything else is said here
        onRetry: (err, attempt, delayMs) =>
          this.rounds.roundFailed(isNothingListening(err), attempt, () =>
            this.log.info('No join ticket yet; asking again', {
              attempt,
              delayMs,
              ...(err instanceof NoTicketError ? {} : { error: chainMessage(err) }),
            }),
          ),
      })
      if (!joined) this.log.info('Init took the node lock; the join client stops')
    } catch (err) {
      if (err instanceof JoinFailedError) {
        this.log.error('Join failed; this node cannot be used', { error: chainMessage(err) })
        throw err
      }
      if (!signal.aborted) throw err
      this.log.info('Join client stopped')
    }
  }

  /** One round over every endpoint; true when joined, false when Init holds the lock. */
  private async attempt(lock: NodeLock, onLocked: () => void): Promise<boolean> {
    const signal = this.stopSignal.signal
    const diskUuid = await this.deps.disk.uuid()
    const reasons: string[] = []
    let refusedConnections = 0
    for (const endpoint of this.deps.endpoints) {
      signal.throwIfAborted()
      if (lock.isLocked) return false
      const got = await this.requestTicket(endpoint, diskUuid).catch((err: unknown) => {
        signal.throwIfAborted()
        if (isRefusedConnection(err)) refusedConnections++
        reasons.push(`${endpoint}: ${this.rounds.failure(endpoint, err)}`)
        return undefined
      })
      if (!got) continue
      this.log.info('Join ticket received', { endpoint })
      const staged = await this.deps.stageComponents(got.ticket.components, signal)
      const plan: JoinPlan = {
        ticket: got.ticket,
        controlPlane: this.controlPlane,
        nodeName: this.nodeName,
        nodeIP: this.deps.self.vpcIP,
        diskUuid,
        loadBalancerEndpoint: this.deps.loadBalancerEndpoint,
        kubeletKeyPem: got.kubeletKeyPem,
        staged,
      }
      try {
        return await joinNode(plan, {
          lock,
          onLocked,
          disk: this.deps.disk,
          paths: this.deps.paths,
          kubeadmJoin: (input, stop) => this.deps.kubeadmJoin(input, AbortSignal.any([signal, stop])),
          log: this.log,
        })
      } finally {
        await staged.discard()
      }
    }
    throw new NoTicketError(reasons, refusedConnections === this.deps.endpoints.length)
  }

  /**
   * A fresh key and CSR per request that reached a join service, as Constellation: a refused
   * request leaves nothing to reuse. One whose connection was refused sent nothing, so its key and
   * CSR serve the next request (while nothing listens, the node asks several times a second, and
   * making them is most of an attempt's CPU).
   */
  private async requestTicket(endpoint: string, diskUuid: string) {
    const { publicKey, privateKey, certificateRequest } = this.unsentCsr ?? (await this.newCsr())
    this.unsentCsr = undefined
    const response = await this.deps
      .requestTicket(
        endpoint,
        {
          diskUuid,
          certificateRequest,
          isControlPlane: this.controlPlane,
          hostPublicKey: Buffer.alloc(0),
          hostCertificatePrincipals: [],
        },
        this.stopSignal.signal,
      )
      .catch((err: unknown) => {
        if (isRefusedConnection(err)) this.unsentCsr = { publicKey, privateKey, certificateRequest }
        throw err
      })
    return {
      ticket: checkJoinTicket(response, { controlPlane: this.controlPlane, kubeletKey: publicKey }),
      kubeletKeyPem: privateKey.export({ type: 'sec1', format: 'pem' }).toString(),
    }
  }

  private async newCsr() {
    // loaded here, as the daemon loads the x509 encoder: not on the path of its start
    const { createCsr, generateEcdsaP256KeyPair } = await import('../../x509/index.js')
    const { publicKey, privateKey } = await generateEcdsaP256KeyPair()
    const certificateRequest = createCsr({
      key: privateKey,
      subject: [
        ['CN', `system:node:${this.nodeName}`],
        ['O', 'system:nodes'],
      ],
      ipSans: [this.deps.self.vpcIP],
      dnsSans: [this.nodeName],
    })
    return { publicKey, privateKey, certificateRequest }
  }

  private get controlPlane(): boolean {
    return this.deps.self.role === 'control-plane'
  }

  private get nodeName(): string {
    return kubernetesNodeName(this.deps.self.name)
  }
}
