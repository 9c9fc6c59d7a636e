// Entry of the bundled CLI (bin/run.js): oclif's runner, bundled with the commands so that the
// framework and the command code share one copy of every module and load from a few files.
export { execute } from '@oclif/core'
