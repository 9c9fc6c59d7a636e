/** Typed, user-facing failures and the exit codes they map to; rendered once by BaseCommand. */
export {
  ExitCode,
  CliError,
  UsageError,
  isExternalFailure,
  messageOf,
  chainMessage,
  exitCodeOf,
  hintOf,
  renderError,
  isErrnoException,
} from './errors.js'
export type { ExitCodeValue, CliErrorOptions, ExternalFailure, RenderedError } from './errors.js'
