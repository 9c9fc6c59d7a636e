/** Operator side of `constellation verify`: attest one node with a fresh nonce against expected measurements. */
import * as grpc from '@grpc/grpc-js'
import {
  AttestationError,
  CLUSTER_ID_PCR,
  clusterIdPcrValue,
  compareMeasurements,
  createValidator,
  requireMeasurements,
  type Measurements,
  type Validator,
  type Variant,
} from '../attestation/index.js'
import { createAttestedChannelCredentials, isAttestationFailure } from '../atls/index.js'
import { CliError, ExitCode, UsageError } from '../errors/index.js'
import { VerifyService, type DescribeResponse } from './service-definition.js'

export const DEFAULT_VERIFY_TIMEOUT_MS = 15_000

export interface VerifyRequest {
  endpoint: string
  variant: Variant
  measurements: Measurements
  /** Hex cluster ID: PCR 15 must then equal SHA256(0^32 ‖ SHA256(clusterID)). */
  clusterId?: string
  timeoutMs?: number
}

export type PcrStatus = 'ok' | 'mismatch' | 'warn' | 'not checked'
export interface PcrReport {
  index: number
  value: string
  expected?: string
  enforced?: boolean
  status: PcrStatus
}
export interface VerifyReport {
  endpoint: string
  variant: string
  trusted: boolean
  pcrs: PcrReport[]
  warnings: string[]
}
export interface VerifyOutcome {
  report?: VerifyReport
  /** Set when the node is not trusted or not reachable; carries the exit code. */
  error?: CliError
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
  const measurements = requireMeasurements(expectedMeasurements(req.measurements, req.clusterId))
  // The inner validator checks everything but the measurements; inspectingValidator compares them
  // itself, so the report can show the quoted PCRs of a refused node too.
  const seen: { pcrs?: Map<number, Buffer>; refusal?: unknown } = {}
  const validator = inspectingValidator(createValidator(req.variant, new Map()), measurements, seen)
  const client = new (grpc.makeGenericClientConstructor(VerifyService, 'verify'))(
    req.endpoint,
    createAttestedChannelCredentials({ validators: [validator] }),
  )
  try {
    const described = await new Promise<DescribeResponse>((resolve, reject) =>
      client.makeUnaryRequest(
        VerifyService.describe!.path,
        () => Buffer.alloc(0),
        (b: Buffer) => VerifyService.describe!.responseDeserialize(b) as DescribeResponse,
        {},
        { deadline: Date.now() + (req.timeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS) },
        (err: grpc.ServiceError | null, res?: DescribeResponse) => (err || !res ? reject(err) : resolve(res)),
      ),
    )
    return { report: report(req.endpoint, described.variant, measurements, seen.pcrs ?? new Map(), true) }
  } catch (err: unknown) {
    if (seen.refusal !== undefined || isAttestationFailure(err)) {
      const cause = seen.refusal ?? err
      const error = new AttestationError(
        `attestation of ${req.endpoint} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause },
      )
      return {
        report: seen.pcrs ? report(req.endpoint, req.variant, measurements, seen.pcrs, false) : undefined,
        error,
      }
    }
    const why =
      (err as { details?: string } | undefined)?.details ?? (err instanceof Error ? err.message : String(err))
    return {
      error: new CliError(
        `node ${req.endpoint} is not reachable: ${why}`,
        ExitCode.Unreachable,
        'check the endpoint and that `constellation verifyservice` runs on the node',
        { cause: err },
      ),
    }
  } finally {
    client.close()
  }
}

/**
 * Runs the full check inside the handshake (signature, nonce, PCR digest, then measurements) and
 * remembers the quoted PCRs, so a refused node's values can still be shown.
 */
function inspectingValidator(
  crypto: Validator,
  measurements: Measurements,
  seen: { pcrs?: Map<number, Buffer>; refusal?: unknown },
): Validator {
  return {
    variant: crypto.variant,
    oid: crypto.oid,
    async validate(document, nonce) {
      try {
        const result = await crypto.validate(document, nonce)
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
  endpoint: string,
  variant: string,
  measurements: Measurements,
  pcrs: Map<number, Buffer>,
  trusted: boolean,
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
  return { endpoint, variant, trusted, pcrs: rows, warnings }
}
