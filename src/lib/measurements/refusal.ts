/** Why a set of reference measurements was refused: one typed error, its reason also in `--json`. */
import { CliError } from '../errors/index.js'

export const REFUSAL_REASONS = [
  'signature',
  'variant',
  'document',
  'download',
  'too-large',
  'timeout',
  'unreachable',
] as const
export type RefusalReason = (typeof REFUSAL_REASONS)[number]

export class MeasurementsRefusedError extends CliError {
  constructor(
    readonly reason: RefusalReason,
    message: string,
    hint?: string,
    cause?: unknown,
  ) {
    super(message, { hint, cause, data: { refused: reason } })
    this.name = 'MeasurementsRefusedError'
  }
}
