/**
 * `constellation init` with its production parts: the process's terminal, signals and environment,
 * aTLS against the workspace's measurements, a text logger. Shared by the oclif command
 * (src/commands/init.ts) and the framework-free entry bin/run.js uses (src/init-run.ts).
 */
import { createAttestedChannelCredentials } from '../lib/atls/index.js'
import { initCluster, type InitResult } from '../lib/init/index.js'
import { createLogger, createRunner, parseDuration } from '../lib/system/index.js'
import { parseHelmTimeout } from '../lib/helm/index.js'
import { onInterrupt, processTerminal, stepProgress } from '../lib/ui/index.js'

export interface InitFlags {
  workspace: string
  conformance: boolean
  'merge-kubeconfig': boolean
  timeout: string
  'skip-helm': boolean
  'skip-helm-wait': boolean
  'helm-timeout': string
  /** --json: no progress lines; the caller prints the result as JSON. */
  json: boolean
}

export function runInit(flags: InitFlags): Promise<InitResult> {
  const debug = process.env.CONSTELL_DEBUG === '1'
  const terminal = processTerminal()
  return initCluster(
    {
      workspace: flags.workspace,
      conformance: flags.conformance,
      mergeKubeconfig: flags['merge-kubeconfig'],
      timeout: { text: flags.timeout, ms: parseDuration(flags.timeout, '--timeout') },
      debug,
      skipHelm: flags['skip-helm'],
      skipHelmWait: flags['skip-helm-wait'],
      helmTimeoutMs: parseHelmTimeout(flags['helm-timeout']),
    },
    {
      progress: stepProgress(terminal, { quiet: flags.json }),
      env: terminal.env,
      onInterrupt: (describe) => onInterrupt(describe),
      credentials: (_config, handshake) => createAttestedChannelCredentials(handshake),
      log: createLogger({ format: 'text', level: debug ? 'debug' : 'warn' }),
      printLastResort: (kubeconfig) => process.stdout.write(kubeconfig),
      helm: { runner: createRunner(), env: process.env },
    },
  )
}
