export {
  writeFileExclusive,
  writeFileAtomic,
  copyFileAtomic,
  readRegularFile,
  lstatIfPresent,
  readTextIfPresent,
  exists,
  SECRET_FILE_MODE,
  writeSecretFile,
  writeNewSecretFilesSync,
  readSecretFile,
} from './files.js'

export { createLogger } from './logger.js'
export type { Logger } from './logger.js'
export { describeRetry, retry, settledWithin, sleepMs } from './retry.js'
export { forEachBounded } from './bounded.js'
export type { RetryOptions } from './retry.js'
export { createRunner, CommandFailedError, runnerWithSignal } from './runner.js'
export type { Runner, CommandOutput, CommandFailure } from './runner.js'
export { parseDuration, formatDuration, MAX_DURATION_MS } from './duration.js'
export { exitAfterGrace } from './exit.js'
export {
  SIGNAL_EXIT_CODES,
  abortOnInterrupt,
  claimInterrupts,
  processSignalIo,
  serveUntilStopped,
} from './signals.js'
export type { InterruptSignal, SignalIo } from './signals.js'
export { runStepsSilently } from './progress.js'
export type { Step, Progress } from './progress.js'
export { parseHostPort, isHostPort, formatHostPort, readEndpoint } from './host-port.js'

export {
  unixSocketPath,
  unixAddressProblem,
  prepareOwnerOnlySocket,
  restrictSocketToOwner,
} from './unix-socket.js'
export { httpGet, DEFAULT_DOWNLOAD_LIMITS, DownloadTooLargeError } from './http-get.js'
export type { HttpGet, DownloadLimits, HttpResponse } from './http-get.js'
export { counted } from './words.js'
