/** A refused attestation: the message says which check failed; the CLI exits with AttestationFailed (4). */
import { CliError, ExitCode } from '../errors/index.js'

export class AttestationError extends CliError {
  constructor(message: string, opts?: ErrorOptions) {
    super(message, { exitCode: ExitCode.AttestationFailed, cause: opts?.cause })
    this.name = 'AttestationError'
  }
}

/**
 * A field of the evidence that is not what the verifier's policy expects: names the field, the
 * expected and the found value, so an operator can tell a wrong config from a wrong node.
 */
export class EvidenceMismatchError extends AttestationError {
  constructor(
    readonly field: string,
    readonly expected: string,
    readonly found: string,
    context = '',
  ) {
    super(`${context ? `${context}: ` : ''}${field}: expected ${expected}, found ${found}`)
    this.name = 'EvidenceMismatchError'
  }
}
