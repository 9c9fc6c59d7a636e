// Stryker's mocha runner 9.6 requires mocha's lib/cli/run-helpers, options and collect-files without an
// extension; mocha 12 renamed them to .cjs (same exports). This maps those three names, nothing else, in
// the Stryker process and in each test runner process (`--require`), until a runner release knows mocha 12.
'use strict'
const Module = require('node:module')
const resolve = Module._resolveFilename
const RENAMED = /[\\/]mocha[\\/]lib[\\/]cli[\\/](run-helpers|options|collect-files)$/
Module._resolveFilename = function (request, ...rest) {
  return resolve.call(this, RENAMED.test(request) ? `${request}.cjs` : request, ...rest)
}
