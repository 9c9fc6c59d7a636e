/**
 * Mutation testing of the code that decides trust: one Stryker run per domain, then a score table.
 *
 *   npm run test:mutation                     # every domain, one after the other (tens of minutes)
 *   npm run test:mutation -- kms upgrade      # only these domains
 *   npm run test:mutation -- --list           # the domains, their files and their tests
 *   npm run test:mutation -- --changed [ref]  # only files changed since ref (default main), for CI
 *
 * Why a wrapper and not one stryker.config: each domain mutates a handful of files and runs only the
 * tests that cover them, so one domain takes minutes; a single run over all files would run every
 * test for the initial coverage pass. Per domain, the HTML and JSON reports go to
 * reports/mutation/<domain>/; survivors that cannot be killed are listed, with the reason, in
 * test/mutation/equivalent-mutants.md.
 *
 * How it runs our tests: the Stryker mocha runner (9.6) loads the project's mocha 12 in-process (the
 * package.json override lets it accept mocha 12) and reads .mocharc.json, but it does not turn the
 * `import: tsx` there into a Node flag; `testRunnerNodeArgs: ['--require', MOCHA12_PATHS, '--import', 'tsx']` gives each test
 * runner process the TypeScript loader. Stryker 10 needs Node 22, so we stay on 9.6 while Node 20
 * is supported.
 */
import './mocha12-paths.cjs'
import { execFileSync } from 'node:child_process'
import { Stryker } from '@stryker-mutator/core'
import { fileURLToPath } from 'node:url'
import type { MutantResult, PartialStrykerOptions } from '@stryker-mutator/api/core'

const MOCHA12_PATHS = fileURLToPath(new URL('./mocha12-paths.cjs', import.meta.url))

interface Domain {
  /** What the domain decides, for --list. */
  about: string
  /** Source files whose mutants are scored. */
  mutate: string[]
  /** Test files (globs) that cover them; only these run. */
  tests: string[]
  /** 'perTest' unless the domain's tests defeat per-test coverage (say why). */
  coverageAnalysis?: 'perTest' | 'all'
  /** More of the repository in the sandbox than src, test and the configs (ignorePatterns negations). */
  sandbox?: string[]
  /** Environment for the domain's test runs (the runners inherit it). */
  env?: Record<string, string>
}

const DOMAINS: Record<string, Domain> = {
  attestation: {
    about: 'the vTPM quote and attestation-key checks, qemu-vtpm, measurements',
    mutate: [
      'src/lib/attestation/vtpm-quote.ts',
      'src/lib/attestation/qemu-vtpm.ts',
      'src/lib/attestation/measurements.ts',
    ],
    // the fuzz tests (fuzz, tpm-ek-fuzz) stay out: they accept any AttestationError, so they kill
    // little that the named refusals do not, and 12,000 documents per mutant would cost an hour
    tests: [
      'test/attestation/qemu-vtpm.test.ts',
      'test/attestation/eventlog/replay.test.ts',
      'test/attestation/measurements.test.ts',
      'test/attestation/document.test.ts',
      // the issuer quoting with a persistent key (Azure's HCL AK) is reached only from the Azure CVM variants
      'test/attestation/cvm-azure.test.ts',
    ],
  },
  'tpm-ek': {
    about: 'the tpm-ek variant: EK certificate chain, TPM-bound AK, credential activation',
    mutate: ['src/lib/attestation/tpm-ek.ts', 'src/lib/attestation/ek-chain.ts'],
    tests: ['test/attestation/tpm-ek.test.ts', 'test/attestation/ek-chain.test.ts'],
    // tpm-ek.test.ts builds its issuer and validator in a before() hook; perTest coverage credits
    // what runs there to the previous test, so the tests that would kill those mutants were never
    // run for them (survivors that fail when applied by hand). Every test runs for every mutant.
    coverageAnalysis: 'all',
  },
  atls: {
    about: 'aTLS: the attested certificate, the nonce it is bound to, and the join direction on the wire',
    mutate: ['src/lib/atls/certificate.ts', 'src/lib/atls/nonce.ts', 'src/lib/atls/challenge.ts'],
    tests: [
      'test/atls/certificate-checks.test.ts',
      'test/atls/atls.test.ts',
      'test/atls/x509.test.ts',
      'test/atls/certificate-fuzz.test.ts',
      'test/atls/challenge.test.ts',
      'test/atls/join-direction.test.ts',
    ],
  },
  joinservice: {
    about: "the join service's admission, ticket rules, CSR policy and peer addresses",
    mutate: [
      'src/lib/joinservice/admission.ts',
      'src/lib/joinservice/csr-policy.ts',
      'src/lib/joinservice/ip-address.ts',
      'src/lib/joinservice/peer-identity.ts',
      'src/lib/joinservice/own-disk.ts',
    ],
    tests: [
      'test/joinservice/admission.test.ts',
      'test/joinservice/csr-policy.test.ts',
      'test/joinservice/peer-identity.test.ts',
      'test/joinservice/ticket.test.ts',
      'test/joinservice/state-disks.test.ts',
    ],
  },
  ticket: {
    about: "the join service's join and rejoin ticket rules: whose disk, which request, what is handed out",
    mutate: ['src/lib/joinservice/ticket.ts'],
    tests: ['test/joinservice/ticket.test.ts'],
  },
  recovery: {
    about:
      'recovery: what a node serving recovery accepts, and what `constellation recover` sends and concludes',
    mutate: [
      'src/lib/statedisk/recovery-server.ts',
      'src/lib/statedisk/recovery-refused.ts',
      'src/lib/recover/recover.ts',
    ],
    tests: [
      'test/statedisk/recovery-server.test.ts',
      'test/statedisk/recovery-server-answers.test.ts',
      'test/recover/recover-retry.test.ts',
    ],
    // recover.test.ts (the CLI as a child process) runs in the sandbox with `sandbox: ['!/bin']` and
    // `env: { CONSTELL_TEST_CLI: 'dev' }` (the sources through bin/dev.js; the sandbox has no dist/),
    // but its dry run takes ~56 s and a run hours at concurrency 1 (each CLI start under tsx, and
    // Stryker's timeouts scale with it): it stays out, and the node's refusals are asserted in
    // recovery-server.test.ts and recover-retry.test.ts instead.
  },
  cvm: {
    about:
      'the confidential-VM validators: SEV-SNP and TDX report verification, the binding to the vTPM quote',
    mutate: [
      'src/lib/attestation/cvm/validator.ts',
      'src/lib/attestation/cvm/binding.ts',
      'src/lib/attestation/cvm/policy.ts',
      'src/lib/attestation/snp/verify.ts',
      'src/lib/attestation/snp/chain.ts',
      'src/lib/attestation/tdx/verify.ts',
      'src/lib/attestation/tdx/chain.ts',
      'src/lib/attestation/tdx/tcb.ts',
      'src/lib/attestation/one-line-name.ts',
    ],
    // the fuzz tests stay out, as for attestation
    tests: [
      'test/attestation/cvm-variants.test.ts',
      'test/attestation/cvm-binding.test.ts',
      'test/attestation/cvm-azure.test.ts',
      'test/attestation/snp/report.test.ts',
      'test/attestation/snp/verify-recorded.test.ts',
      'test/attestation/snp/verify-standin.test.ts',
      'test/attestation/snp/refusals.test.ts',
      'test/attestation/tdx/parse.test.ts',
      'test/attestation/tdx/recorded.test.ts',
      'test/attestation/tdx/standin.test.ts',
      'test/attestation/tdx/chain.test.ts',
      'test/attestation/tdx/tcb.test.ts',
      'test/attestation/empty-subject.test.ts',
    ],
  },
  kms: {
    about: 'KMS URIs, the master secret and HKDF key derivation',
    mutate: ['src/lib/kms/uri.ts', 'src/lib/kms/hkdf.ts', 'src/lib/kms/master-secret.ts'],
    tests: ['test/kms/kms.test.ts', 'test/kms/init-secret.test.ts'],
  },
  statedisk: {
    about: 'state-disk marks and recovery admission',
    mutate: ['src/lib/statedisk/mark.ts', 'src/lib/statedisk/recovery-admission.ts'],
    tests: ['test/statedisk/recovery-admission.test.ts', 'test/statedisk/luks.test.ts'],
  },
  upgrade: {
    about: 'upgrade rules and the plan built from them',
    mutate: ['src/lib/upgrade/plan.ts', 'src/lib/upgrade/rules.ts'],
    tests: ['test/upgrade/plan.test.ts', 'test/upgrade/rules.test.ts'],
  },
  bootstrapdata: {
    about: 'bootstrap-data validation (what a spec may carry, attested or not)',
    mutate: ['src/lib/bootstrapdata/validate.ts'],
    tests: ['test/bootstrapdata/validate.test.ts', 'test/bootstrapdata/file-attributes.test.ts'],
  },
}

interface Score {
  domain: string
  mutants: number
  killed: number
  timeout: number
  survived: number
  noCoverage: number
  errors: number
  score: number
  seconds: number
}

function scoreOf(domain: string, results: MutantResult[], seconds: number): Score {
  const count = (...s: string[]) => results.filter((r) => s.includes(r.status)).length
  const killed = count('Killed')
  const timeout = count('Timeout')
  const survived = count('Survived')
  const noCoverage = count('NoCoverage')
  const detected = killed + timeout
  const valid = detected + survived + noCoverage
  return {
    domain,
    mutants: results.length,
    killed,
    timeout,
    survived,
    noCoverage,
    errors: count('CompileError', 'RuntimeError'),
    score: valid === 0 ? 100 : (100 * detected) / valid,
    seconds,
  }
}

function optionsFor(name: string, domain: Domain, mutate: string[]): PartialStrykerOptions {
  return {
    testRunner: 'mocha',
    testRunnerNodeArgs: ['--require', MOCHA12_PATHS, '--import', 'tsx'],
    mochaOptions: { spec: domain.tests },
    mutate,
    coverageAnalysis: domain.coverageAnalysis ?? 'perTest',
    // the sandbox needs sources, tests and what tests read; not the tool caches (.tools, .cache: ~230 MB)
    ignorePatterns: [
      '/*',
      '!/src',
      '!/test',
      '!/proto',
      '!/templates',
      '!/simulator',
      '!/package.json',
      '!/tsconfig.json',
      '!/.mocharc.json',
      ...(domain.sandbox ?? []),
    ],
    concurrency: Number(process.env.STRYKER_CONCURRENCY ?? 2),
    timeoutMS: 10_000,
    reporters: ['html', 'json', 'progress'],
    htmlReporter: { fileName: `reports/mutation/${name}/index.html` },
    jsonReporter: { fileName: `reports/mutation/${name}/mutation.json` },
    tempDirName: '.stryker-tmp',
    cleanTempDir: 'always',
    plugins: ['@stryker-mutator/mocha-runner'],
    // type errors in a mutant are not a test gap; the checker would cost a tsc per mutant
    disableTypeChecks: true,
  }
}

function changedFiles(ref: string): Set<string> {
  const out = execFileSync('git', ['diff', '--name-only', `${ref}...HEAD`], { encoding: 'utf8' })
  return new Set(out.split('\n').filter(Boolean))
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--list')) {
    for (const [name, d] of Object.entries(DOMAINS))
      console.log(`${name}: ${d.about}\n  mutate: ${d.mutate.join(' ')}\n  tests:  ${d.tests.join(' ')}`)
    return 0
  }
  const changedAt = argv.indexOf('--changed')
  const changed = changedAt >= 0 ? changedFiles(argv[changedAt + 1] ?? 'main') : undefined
  const names = argv.filter((a, i) => !a.startsWith('--') && !(changedAt >= 0 && i === changedAt + 1))
  const unknown = names.filter((n) => !(n in DOMAINS))
  if (unknown.length > 0) {
    console.error(`unknown domain ${unknown.join(', ')}; domains: ${Object.keys(DOMAINS).join(', ')}`)
    return 2
  }
  // every Stryker child process loads the runner plugin, not only the test runners: give them all the shim
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--require "${MOCHA12_PATHS}"`]
    .filter(Boolean)
    .join(' ')
  const scores: Score[] = []
  for (const name of names.length > 0 ? names : Object.keys(DOMAINS)) {
    const domain = DOMAINS[name]
    if (!domain) continue
    const mutate = changed ? domain.mutate.filter((f) => changed.has(f)) : domain.mutate
    if (mutate.length === 0) continue
    const saved = { ...process.env }
    Object.assign(process.env, domain.env)
    const started = Date.now()
    const results = await new Stryker(optionsFor(name, domain, mutate)).runMutationTest()
    scores.push(scoreOf(name, results, Math.round((Date.now() - started) / 1000)))
    for (const key of Object.keys(domain.env ?? {}))
      if (saved[key] === undefined) delete process.env[key]
      else process.env[key] = saved[key]
  }
  console.log('\ndomain         mutants  killed  timeout  survived  no-cov  errors  score    wall')
  for (const s of scores)
    console.log(
      `${s.domain.padEnd(14)} ${String(s.mutants).padStart(7)} ${String(s.killed).padStart(7)} ${String(s.timeout).padStart(8)} ${String(s.survived).padStart(9)} ${String(s.noCoverage).padStart(7)} ${String(s.errors).padStart(7)}  ${s.score.toFixed(1).padStart(5)} %  ${String(s.seconds).padStart(4)} s`,
    )
  return scores.every((s) => s.score >= Number(process.env.MUTATION_THRESHOLD ?? 0)) ? 0 : 1
}

process.exitCode = await main(process.argv.slice(2))
