/** The offered master secret does not open the disk (or nothing is left to recover); the message is safe to send back. */
export class RecoveryRefusedError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RecoveryRefusedError'
  }
}
