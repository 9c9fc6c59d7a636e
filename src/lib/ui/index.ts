/** Terminal presentation: whether to be interactive, tables, and listr2 progress. */
export { processTerminal, canPrompt, stepProgress, linesProgress, inPlace, renderTable } from './output.js'

export { ignoreClosedPipes, onInterrupt, promptOrAbort } from './interrupt.js'
export { commandForUser, shellQuote } from './self-command.js'
