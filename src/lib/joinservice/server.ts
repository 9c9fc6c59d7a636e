/**
 * The join service daemon: join.API on the client-attested aTLS listener (a node proves what it
 * runs, bound to a nonce this server chose, before any handler sees it), with admission, one audit
 * line per request, and status codes that say whether to retry.
 */
import * as grpc from '@grpc/grpc-js'
import {
  APIService,
  type IssueJoinTicketRequest,
  type IssueJoinTicketResponse,
  type IssueRejoinTicketRequest,
  type IssueRejoinTicketResponse,
} from '../../gen/join.js'
import { ChallengeRegistry, listenForAttestedClients, type AttestedClientListener } from '../atls/index.js'
import { chainMessage } from '../errors/index.js'
import { boundedServerOptions, type ConnectionLimits } from '../grpc/index.js'
import { KeyServiceUnreachableError } from '../kms/index.js'
import { formatHostPort, parseHostPort, type Logger } from '../system/index.js'
import { parseCsr } from '../x509/index.js'
import { Admission, type AdmissionLimits } from './admission.js'
import { createAuditLog, type AuditLog, type AuditRecord } from './audit.js'
import type { TokenIssuer } from '../kube/index.js'
import type { ClusterCa } from './cluster-ca.js'
import type { ControlPlaneTurns } from './control-plane-turns.js'
import type { CsrParser } from './csr-policy.js'
import { peerHost } from './ip-address.js'
import type { KubeletSigner } from './kubelet-signer.js'
import type { MemberDirectory } from './members.js'
import { identifyPeer, type PeerIdentity } from './peer-identity.js'
import { JoinRefusedError, TicketStepError } from './refusals.js'
import {
  checkJoinRequest,
  issueJoinTicket,
  issueRejoinTicket,
  type DataKeysGetter,
  type RequestCheckDeps,
  type TicketDeps,
} from './ticket.js'
import { handshakeValidator, type ValidatorSource } from './validator-source.js'

const STOP_GRACE_MS = 10_000
/** A join request is a CSR, a disk UUID and a few names: a few KiB. */
const MAX_JOIN_REQUEST_BYTES = 64 * 1024

export interface JoinServiceLimits extends AdmissionLimits {
  /** Bytes of one request; larger ones are refused by grpc-js before any handler runs. */
  maxRequestBytes?: number
  /** Connections per peer address and in all; the defaults fit any genuine node. */
  connections?: ConnectionLimits
}

export interface JoinServiceOptions {
  /** HOST:PORT; port 0 picks a free one. */
  listen: string
  validatorSource: ValidatorSource
  /** kms.API/GetDataKeys of the cluster's key service. */
  keyService: DataKeysGetter
  tokens: TokenIssuer
  kubeletSigner: KubeletSigner
  /** Reads and verifies the node's PKCS#10 request; x509's parseCsr unless a test passes a fake. */
  parseCsr?: CsrParser
  ca: Pick<ClusterCa, 'caCertHash' | 'controlPlaneFiles'>
  /** What a joining control plane needs beside the PKI to run its own key and join services. */
  controlPlaneServiceFiles: TicketDeps['controlPlaneServiceFiles']
  /** What the cluster runs now (cluster-kubernetes.ts in production). */
  kubernetes: TicketDeps['kubernetes']
  /** The cluster's state disks (ConfigMaps in production): join tickets add theirs, rejoins must be among them. */
  stateDisks: TicketDeps['stateDisks']
  cluster: { measurementSalt: Buffer; apiServerEndpoint: string }
  /** Cluster-wide turns for control-plane joins (a Lease in production); this service's queue alone without. */
  controlPlaneTurns?: ControlPlaneTurns
  /** The cluster's metadata: who a peer is (name, role) is the instance listed at its address. */
  members: MemberDirectory
  clock: () => Date
  logger: Logger
  limits?: JoinServiceLimits
}

export function createJoinService(opts: JoinServiceOptions): JoinService {
  return new JoinService(opts)
}

type RequestRecord = Omit<AuditRecord, 'verdict' | 'reason'>
type Outcome = Pick<AuditRecord, 'verdict' | 'reason'> & { status: Partial<grpc.StatusObject> }

export class JoinService {
  private readonly server: grpc.Server
  private readonly log: Logger
  private readonly audit: AuditLog
  private readonly admission: Admission
  private readonly challenges: ChallengeRegistry
  private readonly ticketDeps: TicketDeps
  private readonly checkDeps: RequestCheckDeps
  private readonly inFlight = new Set<Promise<void>>()
  private listener?: AttestedClientListener
  private closing = false
  private stopping?: Promise<void>
  private resolveDone!: () => void
  /** Resolves once the service has stopped. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve))

  constructor(private readonly opts: JoinServiceOptions) {
    this.log = opts.logger.child('joinservice')
    this.audit = createAuditLog(this.log)
    this.admission = new Admission(opts.limits)
    this.challenges = new ChallengeRegistry(() => opts.clock().getTime())
    this.ticketDeps = {
      dataKeys: opts.keyService,
      tokens: opts.tokens,
      kubeletSigner: opts.kubeletSigner,
      ca: opts.ca,
      controlPlaneServiceFiles: opts.controlPlaneServiceFiles,
      kubernetes: opts.kubernetes,
      measurementSalt: opts.cluster.measurementSalt,
      stateDisks: opts.stateDisks,
      apiServerEndpoint: opts.cluster.apiServerEndpoint,
      clock: opts.clock,
    }
    this.checkDeps = { parseCsr: opts.parseCsr ?? parseCsr }
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': opts.limits?.maxRequestBytes ?? MAX_JOIN_REQUEST_BYTES,
      // nothing reads channelz here; it registered every connection (one per join) and call
      'grpc.enable_channelz': 0,
      ...boundedServerOptions(opts.limits?.connections),
    })
    this.server.addService(APIService, {
      issueJoinTicket: this.issueJoinTicket,
      issueRejoinTicket: this.issueRejoinTicket,
    })
  }

  /** Listens and serves; resolves with the bound HOST:PORT. */
  async start(): Promise<string> {
    const { host, port } = parseHostPort(this.opts.listen, { requirePort: true, allowPortZero: true })
    this.listener = await listenForAttestedClients(
      this.server,
      { host, port },
      {
        validators: [handshakeValidator(this.opts.validatorSource)],
        challenges: this.challenges,
        log: this.log,
        limits: this.opts.limits?.connections,
        onVerified: (result, peer) => {
          for (const warning of result.warnings)
            this.log.warn('Joining node attested with a warning', { peer, warning })
        },
        // a node refused before it attested never reaches IssueJoinTicket, so it is audited here
        onRefusedAttestation: (peer, rpc, reason) =>
          this.audit({ rpc, node: '', role: 'unknown', peer, verdict: 'refused', reason }),
        onRefusedCall: (peer, method, reason) =>
          this.audit({ rpc: rpcName(method), node: '', role: 'unknown', peer, verdict: 'refused', reason }),
      },
    )
    const address = formatHostPort(host, this.listener.port)
    this.log.info('Join service listening', { address })
    return address
  }

  /** Refuses new requests, lets those in flight finish, force-stops after graceMs; safe to call more than once. */
  stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      this.closing = true
      const graceOver = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref())
      await Promise.race([Promise.allSettled([...this.inFlight]), graceOver])
      await Promise.race([this.listener?.close(), graceOver])
      this.server.forceShutdown() // whatever the grace period did not end
      this.log.info('Join service stopped')
      this.resolveDone()
    })()
    return this.stopping
  }

  private readonly issueJoinTicket: grpc.handleUnaryCall<IssueJoinTicketRequest, IssueJoinTicketResponse> = (
    call,
    reply,
  ) => {
    const peer = call.getPeer()
    const record: RequestRecord = {
      rpc: 'IssueJoinTicket',
      node: '',
      role: call.request.isControlPlane ? 'control-plane' : 'worker',
      peer,
      diskUuid: call.request.diskUuid.slice(0, 64),
    }
    const signal = hangUp(call)
    this.serve(call, reply, record, async () => {
      const checked = checkJoinRequest(call.request, await this.identify(peer, record), this.checkDeps)
      return this.admission.run(checked.role, () => this.issueInTurn(checked, signal), signal)
    })
  }

  /** A control plane's ticket within its cluster-wide turn, which it gives back if it does not get the ticket. */
  private async issueInTurn(
    checked: Parameters<typeof issueJoinTicket>[0],
    signal: AbortSignal,
  ): Promise<IssueJoinTicketResponse> {
    const turns = checked.role === 'control-plane' ? this.opts.controlPlaneTurns : undefined
    const turn = await turns?.take(checked.node, signal).catch((err: unknown) => {
      throw signal.aborted ? err : new TicketStepError('taking the control-plane join turn', err)
    })
    try {
      const ticket = await issueJoinTicket(checked, this.ticketDeps)
      if (signal.aborted) await turn?.release() // the answer goes nowhere: the node cannot join with it
      return ticket
    } catch (err) {
      await turn?.release()
      throw err
    }
  }

  /** A rejoin is one key-service call: nothing worth queueing. */
  private readonly issueRejoinTicket: grpc.handleUnaryCall<
    IssueRejoinTicketRequest,
    IssueRejoinTicketResponse
  > = (call, reply) => {
    const peer = call.getPeer()
    const record: RequestRecord = {
      rpc: 'IssueRejoinTicket',
      node: '',
      role: 'unknown',
      peer,
      diskUuid: call.request.diskUuid.slice(0, 64),
    }
    this.serve(call, reply, record, async () =>
      issueRejoinTicket(call.request, await this.identify(peer, record), this.ticketDeps),
    )
  }

  /** Who the peer is (metadata and its attested connection); the audit line names it from then on. */
  private async identify(peer: string, record: RequestRecord): Promise<PeerIdentity> {
    const identity = await identifyPeer(this.opts.members, peerHost(peer), this.listener?.attestation(peer))
    record.node = identity.node
    record.role = identity.role
    return identity
  }

  /** Runs one request: refused while stopping, tracked for a graceful stop, audited once, answered once. */
  private serve<Res>(
    call: grpc.ServerUnaryCall<unknown, Res>,
    reply: grpc.sendUnaryData<Res>,
    record: RequestRecord,
    handle: () => Promise<Res>,
  ): void {
    if (this.closing) {
      this.audit({ ...record, verdict: 'error', reason: 'join service is stopping' })
      reply({ code: grpc.status.UNAVAILABLE, details: 'join service is stopping; try another endpoint' })
      return
    }
    const done = handle()
      .then(
        (response) => {
          this.audit({ ...record, verdict: 'ok' })
          reply(null, response)
        },
        (err: unknown) => {
          const outcome = this.outcomeOf(err, call.cancelled)
          const node = err instanceof JoinRefusedError && err.node ? err.node : record.node
          this.audit({ ...record, node, verdict: outcome.verdict, reason: outcome.reason })
          reply(outcome.status)
        },
      )
      .finally(() => this.inFlight.delete(done))
    this.inFlight.add(done)
  }

  /** Refusals go back as they are (they name a field); failures name only their step, the log has the rest. */
  private outcomeOf(err: unknown, cancelled: boolean): Outcome {
    if (err instanceof JoinRefusedError) {
      const code =
        err.status === 'permission-denied' ? grpc.status.PERMISSION_DENIED : grpc.status.INVALID_ARGUMENT
      return { verdict: 'refused', reason: err.message, status: { code, details: err.message } }
    }
    if (cancelled)
      return {
        verdict: 'error',
        reason: 'the node hung up',
        status: { code: grpc.status.CANCELLED, details: 'cancelled' },
      }
    if (err instanceof TicketStepError) {
      this.log.error('Issuing a ticket failed', { step: err.step, error: chainMessage(err) })
      const code =
        err.cause instanceof KeyServiceUnreachableError ? grpc.status.UNAVAILABLE : grpc.status.INTERNAL
      const details = `issuing ticket: ${err.message}`
      return { verdict: 'error', reason: err.message, status: { code, details } }
    }
    this.log.error('Issuing a ticket failed unexpectedly', { error: chainMessage(err) })
    const details = 'issuing ticket failed; the join service log says why'
    return { verdict: 'error', reason: details, status: { code: grpc.status.INTERNAL, details } }
  }
}

/** Aborts when the node hangs up, so a queued join leaves the queue. */
function hangUp(call: grpc.ServerUnaryCall<unknown, unknown>): AbortSignal {
  const controller = new AbortController()
  call.once('cancelled', () => controller.abort(new Error('the node hung up')))
  return controller.signal
}

const rpcName = (path: string) => path.replace(/^\/join\.API\//, '')
