// Loaded by mocha (.mocharc.json "require") before its workers and any test start: the processes the
// tests spawn (the CLI, node daemons, mocha's own workers) inherit this environment. This machine
// sets NODE_EXTRA_CA_CERTS to the system CA bundle, which every Node process parses at start
// (~40 ms of CPU each, thousands of processes per run); nothing under test talks to a public TLS
// server, so the tests' processes go without it. The benchmarks measure both (bench/env.ts).
delete process.env.NODE_EXTRA_CA_CERTS
