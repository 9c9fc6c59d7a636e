/**
 * The environments the process benchmarks run in. This machine sets NODE_EXTRA_CA_CERTS to the
 * system CA bundle, which Node reads and parses at every process start before any of our code runs
 * (`node -e 0`: ~100 ms with it, ~36 ms without). Benchmarks that start processes report both: the
 * machine as it is, and a workstation without the variable.
 */
const { NODE_EXTRA_CA_CERTS: _extraCaCerts, ...withoutExtraCaCerts } = process.env

export const ENVIRONMENTS = {
  machine: process.env,
  withoutNodeExtraCaCerts: withoutExtraCaCerts,
} satisfies Record<string, NodeJS.ProcessEnv>
