import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { validatorForConfig } from '../lib/attestation/index.js'
import { createAttestedChannelCredentials } from '../lib/atls/index.js'
import { UsageError } from '../lib/errors/index.js'
import { initCluster, type InitResult } from '../lib/init/index.js'
import { createLogger } from '../lib/system/index.js'
import { processTerminal } from '../lib/ui/index.js'

export default class Init extends BaseCommand {
  static override description = 'Initialize the cluster: attest the first node and bootstrap Kubernetes on it'
  static override examples = [
    '<%= config.bin %> init',
    '<%= config.bin %> init -C ./cluster --merge-kubeconfig',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    yes: Flags.boolean({
      char: 'y',
      description: 'do not ask for confirmation (init never asks; accepted for scripts)',
    }),
    conformance: Flags.boolean({ description: 'keep kube-proxy for Kubernetes conformance tests' }),
    'merge-kubeconfig': Flags.boolean({
      description: 'merge the admin kubeconfig into ~/.kube/config (or $KUBECONFIG)',
    }),
    timeout: Flags.string({ description: 'give up after this long (e.g. 90s, 5m)', default: '5m' }),
  }

  async run(): Promise<InitResult> {
    const { flags } = await this.parse(Init)
    const terminal = processTerminal()
    const result = await initCluster(
      {
        workspace: flags.workspace,
        conformance: flags.conformance,
        mergeKubeconfig: flags['merge-kubeconfig'],
        timeoutMs: parseDuration(flags.timeout),
        quiet: this.jsonEnabled(),
      },
      {
        terminal,
        credentials: (config) =>
          createAttestedChannelCredentials({ validators: [validatorForConfig(config)] }),
        log: createLogger({ format: 'text', level: process.env.CONSTELL_DEBUG === '1' ? 'debug' : 'warn' }),
      },
    )
    this.log('Your Constellation cluster was successfully initialized.')
    this.log(`  Cluster identifier        ${result.clusterID}`)
    this.log(`  Kubernetes configuration  ${result.kubeconfig}`)
    this.log(`  Master secret             ${result.masterSecret} (keep it safe: it recovers the cluster)`)
    this.log(
      result.mergedInto
        ? `Merged into ${result.mergedInto}; its current context is the new cluster.`
        : `To use the cluster: export KUBECONFIG="${result.kubeconfig}"`,
    )
    return result
  }
}

function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h)$/.exec(text)
  if (!m) throw new UsageError(`--timeout ${JSON.stringify(text)} is not a duration like 90s or 5m`)
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h']
  return Number(m[1]) * unit
}
