/** Failures talking to the TPM. */
import { CliError } from '../errors/index.js'

/** A TPM command that failed; responseCode is set when the TPM itself refused it. */
export class TpmError extends Error {
  constructor(
    message: string,
    readonly responseCode?: number,
    opts?: ErrorOptions,
  ) {
    super(message, opts)
    this.name = 'TpmError'
  }
}

/** No TPM at the configured place: the node's setup is wrong, which is not a bug in this tool. */
export class TpmUnavailableError extends CliError {
  constructor(message: string, cause: unknown) {
    super(message, {
      hint: "check the node config's tpm setting: `device` must name the TPM (usually /dev/tpmrm0), `swtpm` a running swtpm's server port",
      cause,
    })
    this.name = 'TpmUnavailableError'
  }
}
