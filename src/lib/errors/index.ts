/** Typed, user-facing failures and the exit codes they map to; rendered once by BaseCommand. */
export {
  ExitCode,
  CliError,
  UsageError,
  messageOf,
  chainMessage,
  exitCodeOf,
  hintOf,
  renderError,
  isErrnoException,
} from './errors.js'
export type { CliErrorOptions, ExternalFailure } from './errors.js'
