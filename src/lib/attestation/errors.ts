/** A refused attestation: the message says which check failed; the CLI exits with AttestationFailed (4). */
import { CliError, ExitCode } from '../errors/index.js'

export class AttestationError extends CliError {
  constructor(message: string, opts?: ErrorOptions) {
    super(message, { exitCode: ExitCode.AttestationFailed, cause: opts?.cause })
    this.name = 'AttestationError'
  }
}
