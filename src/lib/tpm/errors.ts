/** Failures talking to the TPM; responseCode is set when the TPM itself refused a command. */
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
