/**
 * `constellation init` between its flags and its output, shared by the oclif command
 * (src/commands/init.ts) and the framework-free entry bin/run.js uses (src/init-run.ts).
 */
import { validatorForConfig } from '../attestation/index.js'
import { createAttestedChannelCredentials } from '../atls/index.js'
import { createLogger, parseDuration } from '../system/index.js'
import { processTerminal } from '../ui/index.js'
import { initCluster, type InitResult } from './init.js'

export interface InitFlags {
  workspace: string
  conformance: boolean
  'merge-kubeconfig': boolean
  timeout: string
  /** --json: no progress lines; the caller prints the result as JSON. */
  json: boolean
}

export function runInit(flags: InitFlags): Promise<InitResult> {
  const debug = process.env.CONSTELL_DEBUG === '1'
  return initCluster(
    {
      workspace: flags.workspace,
      conformance: flags.conformance,
      mergeKubeconfig: flags['merge-kubeconfig'],
      timeoutMs: parseDuration(flags.timeout, '--timeout'),
      timeout: flags.timeout,
      quiet: flags.json,
      debug,
    },
    {
      terminal: processTerminal(),
      credentials: (config) => createAttestedChannelCredentials({ validators: [validatorForConfig(config)] }),
      log: createLogger({ format: 'text', level: debug ? 'debug' : 'warn' }),
      printLastResort: (kubeconfig) => process.stdout.write(kubeconfig),
    },
  )
}

/** The lines init prints to stdout on success (without --json). */
export function initSummary(result: InitResult): string[] {
  return [
    'Your Constellation cluster was successfully initialized.',
    `  Cluster identifier        ${result.clusterID}`,
    `  Kubernetes configuration  ${result.kubeconfig}`,
    `  Master secret             ${result.masterSecret} (${result.masterSecretSource === 'reused' ? 'reused from an earlier attempt; ' : ''}keep it safe: it recovers the cluster)`,
    result.mergedInto
      ? `Merged into ${result.mergedInto}; its current context is the new cluster.`
      : `To use the cluster: export KUBECONFIG="${result.kubeconfig}"`,
    '',
    ...result.nextSteps,
  ]
}

/** The lines init prints to stderr on success (without --json, where `warnings` carries them). */
export function initWarnings(result: InitResult): string[] {
  return result.warnings.map((w) => `Warning: ${w}`)
}
