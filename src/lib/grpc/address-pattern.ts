/**
 * grpc-js formats every address it connects to with node:net's isIPv6, which matches a large
 * regular expression. V8 compiles a regular expression to bytecode at its first use and to machine
 * code at its second: for this one ~3.3 ms of a client's first connection (init's, a joining
 * node's), where compiling it to machine code at once takes ~0.8 ms. Clients do that once per
 * process before they dial.
 */
import { isIPv6 } from 'node:net'
import { setFlagsFromString } from 'node:v8'

let compiled = false

export function compileAddressPattern(): void {
  if (compiled) return
  compiled = true
  // a process started without tier-up keeps it off
  if ([...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) => a.includes('no-regexp-tier-up')))
    return
  setFlagsFromString('--no-regexp-tier-up')
  try {
    isIPv6('::1')
  } finally {
    setFlagsFromString('--regexp-tier-up')
  }
}
