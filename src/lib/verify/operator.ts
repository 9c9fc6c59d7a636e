/** Operator side of `constellation verify`: attest one node with a fresh nonce against expected measurements. */
import * as grpc from '@grpc/grpc-js'
import {
  attestationAssurance,
  type CvmSummary,
  AttestationError,
  CLUSTER_ID_PCR,
  clusterIdPcrValue,
  compareMeasurements,
  createValidator,
  requireMeasurements,
  type Measurements,
  type ReplayedEvent,
  type ValidationResult,
  type Validator,
  type ValidatorOptions,
  type AttestationAssurance,
  type AttestationVariant,
} from '../attestation/index.js'
import { createAttestedChannelCredentials, isAttestationFailure } from '../atls/index.js'
import { CliError, type CliErrorOptions, ExitCode, messageOf, UsageError } from '../errors/index.js'
import { withoutRpcInternals } from '../grpc/index.js'
import { formatDuration, parseDuration } from '../system/index.js'
import { VerifyService, type DescribeResponse } from './service-definition.js'
import { attestWithGetAttestation, type VerifyProtocol } from './get-attestation-client.js'

export const DEFAULT_VERIFY_TIMEOUT_MS = 15_000
/** `--timeout` of the commands that attest a node. */
export function parseAttestTimeout(text: string): number {
  return parseDuration(text, '--timeout')
}

export interface AttestRequest {
  endpoint: string
  variant: AttestationVariant
  /** What the variant needs beyond measurements: tpm-ek's manufacturer roots. */
  validatorOptions?: ValidatorOptions
  /** Bound on everything: TCP connect, TLS handshake, attestation check and the call. */
  timeoutMs?: number
  /** Keep transport details in errors (CONSTELL_DEBUG=1). */
  debug?: boolean
  /** aTLS (default) or Constellation's plain-gRPC GetAttestation; the same checks either way. */
  protocol?: VerifyProtocol
}

export interface VerifyRequest extends AttestRequest {
  measurements: Measurements
  /** Hex cluster ID: PCR 15 must then equal SHA256(0^32 ‖ SHA256(clusterID)). */
  clusterId?: string
  /** `--raw`: given the attestation document the node sent, trusted or not, before the outcome returns. */
  saveDocument?: (document: Buffer) => Promise<void>
}

export type PcrStatus = 'ok' | 'mismatch' | 'warn' | 'not checked'
export interface PcrReport {
  index: number
  value: string
  expected?: string
  enforced?: boolean
  status: PcrStatus
}
/**
 * What the node's event log says was measured, per PCR. `replayed: false` when the node sent no log:
 * then only the quoted values speak (not refused, as nodes without securityfs exist).
 */
export type EventLogReport =
  | { replayed: true; bank: string; pcrs: { index: number; replayed: boolean; events: LoggedEvent[] }[] }
  | { replayed: false; reason: string }
export type LoggedEvent = Omit<ReplayedEvent, 'pcr'>

export interface VerifyReport {
  endpoint: string
  variant: string
  trusted: boolean
  pcrs: PcrReport[]
  warnings: string[]
  /** The cluster ID PCR 15 was checked against, when there was one. */
  clusterId?: string
  /**
   * tpm-ek: the node's EK certificate chained to the configured roots and its TPM activated a
   * credential for the AK that quoted (akName: nameAlg || H(AK public area), hex).
   */
  activation?: { akName: string; activated: boolean }
  /** What passing this variant's attestation proves (qemu-vtpm: nothing about the key). */
  attestation: AttestationAssurance
  /** The confidential-VM variants: what the hardware evidence showed, and whose root it chains to. */
  hardware?: CvmSummary
  /** Set for a trusted node: its event log, replayed. */
  eventLog?: EventLogReport
}
export interface VerifyOutcome {
  report?: VerifyReport
  /** Set when the node is not trusted or not reachable; carries the exit code. */
  error?: CliError
}

/** A node whose attestation was refused; carries the quoted PCRs when the node sent them. */
export class UntrustedNodeError extends CliError {
  constructor(
    message: string,
    readonly report: VerifyReport | undefined,
    opts: Omit<CliErrorOptions, 'exitCode'> = {},
  ) {
    super(message, { ...opts, exitCode: ExitCode.AttestationFailed })
    this.name = 'UntrustedNodeError'
  }
}

/** Expected measurements with PCR 15 pinned to the cluster ID when one is given. */
export function expectedMeasurements(base: Measurements, clusterId?: string): Measurements {
  const out: Measurements = new Map(base)
  if (clusterId === undefined) return out
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(clusterId))
    throw new UsageError(`--cluster-id ${JSON.stringify(clusterId)} is not hex`)
  out.set(CLUSTER_ID_PCR, { expected: clusterIdPcrValue(Buffer.from(clusterId, 'hex')), warnOnly: false })
  return out
}

/** Warn-only mismatches come back in the report (the command prints them once), not through a logger. */
export async function verifyNode(req: VerifyRequest): Promise<VerifyOutcome> {
  const seen: Seen = {}
  const outcome = await attestNode(req, seen)
  // --raw: written whether or not the node was trusted (a refused document is what one wants to read)
  if (req.saveDocument && seen.document) await req.saveDocument(seen.document)
  return outcome
}

async function attestNode(req: VerifyRequest, seen: Seen): Promise<VerifyOutcome> {
  const measurements = requireMeasurements(expectedMeasurements(req.measurements, req.clusterId))
  // The inner validator checks everything but the measurements; inspectingValidator compares them
  // itself, so the report can show the quoted PCRs of a refused node too.
  const validator = inspectingValidator(validatorFor(req), measurements, seen)
  try {
    const described = await attest(req, validator, seen)
    const pcrs = seen.pcrs ?? new Map<number, Buffer>()
    return { report: report(req, described.variant, measurements, pcrs, true, seen.verified) }
  } catch (err: unknown) {
    if (seen.refusal === undefined && !isAttestationFailure(err)) return { error: unreachable(req, err) }
    const cause = seen.refusal ?? err
    const shown = seen.pcrs ? report(req, req.variant, measurements, seen.pcrs, false) : undefined
    const pcr15 = seen.pcrs ? clusterIdMismatch(measurements, seen.pcrs, req.clusterId) : undefined
    // the message already holds the cause's words; the cause itself only for CONSTELL_DEBUG=1
    const error = new UntrustedNodeError(
      `attestation of ${req.endpoint} failed: ${messageOf(cause)}${pcr15 ? `\n${pcr15.reason}` : ''}`,
      shown,
      { hint: pcr15?.hint, cause: req.debug ? cause : undefined, data: shown && { ...shown } },
    )
    return { report: shown, error }
  }
}

/** Attests a node with a fresh nonce, checking everything but measurements, and returns all quoted PCRs. */
export async function readNodePcrs(
  req: AttestRequest,
): Promise<{ variant: string; pcrs: Map<number, Buffer> }> {
  const seen: Seen = {}
  const validator = inspectingValidator(validatorFor(req), new Map(), seen)
  try {
    const described = await attest(req, validator, seen)
    return { variant: described.variant, pcrs: seen.pcrs ?? new Map() }
  } catch (err: unknown) {
    if (seen.refusal === undefined && !isAttestationFailure(err)) throw unreachable(req, err)
    const cause = seen.refusal ?? err
    throw new AttestationError(
      `attestation of ${req.endpoint} failed: ${messageOf(cause)}`,
      req.debug ? { cause } : undefined,
    )
  }
}

type Seen = {
  /** The last attestation document the node sent. */
  document?: Buffer
  pcrs?: Map<number, Buffer>
  refusal?: unknown
  /** The handshake's final result: for tpm-ek, after the credential activation. */
  verified?: ValidationResult
}

/** The variant's validator with no measurements: inspectingValidator compares them itself. */
const validatorFor = (req: AttestRequest) =>
  createValidator(req.variant, new Map(), undefined, req.validatorOptions)

const attest = (req: AttestRequest, validator: Validator, seen: Seen) =>
  req.protocol === 'get-attestation'
    ? attestWithGetAttestation(req.endpoint, validator, req.timeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS, seen)
    : describeOverAtls(req, validator, seen)

async function describeOverAtls(
  req: AttestRequest,
  validator: Validator,
  seen: Seen,
): Promise<DescribeResponse> {
  const timeoutMs = req.timeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS
  const client = new (grpc.makeGenericClientConstructor(VerifyService, 'verify'))(
    req.endpoint,
    createAttestedChannelCredentials({
      validators: [validator],
      handshakeTimeoutMs: timeoutMs,
      onVerified: (result) => (seen.verified = result),
    }),
  )
  try {
    return await new Promise<DescribeResponse>((resolve, reject) =>
      client.makeUnaryRequest(
        VerifyService.describe!.path,
        () => Buffer.alloc(0),
        (b: Buffer) => VerifyService.describe!.responseDeserialize(b) as DescribeResponse,
        {},
        { deadline: Date.now() + timeoutMs },
        (err: grpc.ServiceError | null, res?: DescribeResponse) => (err || !res ? reject(err) : resolve(res)),
      ),
    )
  } finally {
    client.close() // also destroys a handshake still in flight (the channel drops its connector)
  }
}

function unreachable(req: AttestRequest, err: unknown): CliError {
  const timeoutMs = req.timeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS
  const code = (err as { code?: unknown } | undefined)?.code
  const why =
    code === grpc.status.DEADLINE_EXCEEDED
      ? `no answer within ${formatDuration(timeoutMs)}`
      : withoutRpcInternals((err as { details?: string } | undefined)?.details ?? messageOf(err))
  return new CliError(`node ${req.endpoint} is not reachable: ${why}`, {
    exitCode: ExitCode.Unreachable,
    hint: 'check the endpoint and that `constellation verifyservice` runs on the node (port 30081 unless given)',
    ...(req.debug ? { cause: err } : undefined),
  })
}

/**
 * PCR 15 holds the cluster ID (extended once at the node lock), so a mismatch there is not about
 * the node's software but about which cluster it belongs to.
 */
function clusterIdMismatch(
  measurements: Measurements,
  pcrs: ReadonlyMap<number, Buffer>,
  clusterId: string | undefined,
): { reason: string; hint: string } | undefined {
  const want = measurements.get(CLUSTER_ID_PCR)
  const got = pcrs.get(CLUSTER_ID_PCR)
  if (!want || want.warnOnly || !got || got.equals(want.expected)) return undefined
  const zero = got.equals(Buffer.alloc(got.length))
  if (clusterId === undefined)
    return {
      reason: `PCR ${CLUSTER_ID_PCR} is not zero: the node was initialized and belongs to a cluster.`,
      hint: 'to check it belongs to yours, pass --cluster-id HEX or run in the cluster workspace (-C DIR), whose state has the cluster ID',
    }
  if (zero)
    return {
      reason: `PCR ${CLUSTER_ID_PCR} is zero: the node was never initialized and belongs to no cluster.`,
      hint: `it is not part of cluster ${clusterId}; initialize it or let it join first`,
    }
  return {
    reason: `PCR ${CLUSTER_ID_PCR} holds another cluster ID: the node belongs to another cluster, not to ${clusterId}.`,
    hint: 'check --node-endpoint and the workspace (-C); the node is not part of this cluster',
  }
}

/**
 * Runs the full check inside the handshake (signature, nonce, PCR digest, then measurements) and
 * remembers the quoted PCRs, so a refused node's values can still be shown. Everything else of the
 * variant passes through: the activation target of its result (tpm-ek: the connection then has
 * the node activate a credential before it counts), an activation expectation, its challenge.
 */
function inspectingValidator(crypto: Validator, measurements: Measurements, seen: Seen): Validator {
  return {
    variant: crypto.variant,
    oid: crypto.oid,
    ...(crypto.challengeActivation && { challengeActivation: crypto.challengeActivation.bind(crypto) }),
    async validate(document, nonce, expected) {
      seen.document = document
      try {
        const result = await crypto.validate(document, nonce, expected)
        seen.pcrs = result.pcrs
        const { errors, warnings } = compareMeasurements(measurements, result.pcrs)
        if (errors.length > 0)
          throw new AttestationError(`measurement validation failed:\n${errors.join('\n')}`)
        return { ...result, warnings }
      } catch (err: unknown) {
        seen.refusal = err
        throw err
      }
    },
  }
}

function report(
  req: VerifyRequest,
  variant: string,
  measurements: Measurements,
  pcrs: Map<number, Buffer>,
  trusted: boolean,
  verified?: ValidationResult,
): VerifyReport {
  const { warnings } = compareMeasurements(measurements, pcrs)
  const rows = [...new Set([...pcrs.keys(), ...measurements.keys()])]
    .sort((a, b) => a - b)
    .map((index): PcrReport => {
      const value = pcrs.get(index)?.toString('hex') ?? ''
      const want = measurements.get(index)
      if (!want) return { index, value, status: 'not checked' }
      const equal = want.expected.toString('hex') === value
      return {
        index,
        value,
        expected: want.expected.toString('hex'),
        enforced: !want.warnOnly,
        status: equal ? 'ok' : want.warnOnly ? 'warn' : 'mismatch',
      }
    })
  const clusterId = req.clusterId === undefined ? {} : { clusterId: req.clusterId }
  const activation = verified?.activation && {
    activation: { akName: verified.activation.akName.toString('hex'), activated: verified.activation.proven },
  }
  return {
    endpoint: req.endpoint,
    variant,
    trusted,
    pcrs: rows,
    warnings,
    ...clusterId,
    ...activation,
    attestation: attestationAssurance(req.variant),
    ...(verified?.cvm && { hardware: verified.cvm }),
    ...(trusted && { eventLog: eventLogReport(verified) }),
  }
}

function eventLogReport(verified: ValidationResult | undefined): EventLogReport {
  const log = verified?.eventLog
  if (!log) return { replayed: false, reason: 'the node sent no event log: nothing was replayed' }
  const byPcr = new Map<number, LoggedEvent[]>()
  for (const { pcr, ...event } of log.events) byPcr.set(pcr, [...(byPcr.get(pcr) ?? []), event])
  return {
    replayed: true,
    bank: log.bank,
    pcrs: [...byPcr]
      .sort(([a], [b]) => a - b)
      .map(([index, events]) => ({ index, replayed: log.pcrs.includes(index), events })),
  }
}
