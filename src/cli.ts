// Entry of the bundled CLI (bin/run.js): oclif's runner, bundled with the commands so that the
// framework and the command code share one copy of every module and load from a few files.
export { execute } from '@oclif/core'
// package.json's oclif.hooks points here (identifier commandNotFound): no extra file to load.
export { commandNotFound } from './command-not-found.js'
