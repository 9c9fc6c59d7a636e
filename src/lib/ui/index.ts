/** Terminal presentation: whether to be interactive, tables, and listr2 progress. */
export {
  processTerminal,
  useSpinner,
  canPrompt,
  runTasks,
  stepProgress,
  linesProgress,
  inPlace,
  renderTable,
} from './output.js'
export type { Terminal } from './output.js'
export { ignoreClosedPipes, onInterrupt, promptOrAbort } from './interrupt.js'
export { CLI_NAME, commandForUser, shellQuote } from './self-command.js'
export type { SelfCommandFs } from './self-command.js'
