import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { DEFAULT_HELM_TIMEOUT } from '../lib/helm/index.js'
import { initSummary, initWarnings, type InitResult } from '../lib/init/index.js'
import { runInit } from '../wiring/init.js'

// bin/run.js runs init through src/init-run.ts, without oclif; this class gives it help, usage
// errors and a place in the command list. Flags here and there must stay the same (tested).
export default class Init extends BaseCommand {
  static override description =
    'Initialize the cluster: attest the first node, bootstrap Kubernetes on it, then install the pinned Helm releases (CNI, CoreDNS, cert-manager)'
  static override examples = [
    '<%= config.bin %> init',
    '<%= config.bin %> init -C ./cluster --merge-kubeconfig',
    '<%= config.bin %> init --skip-helm-wait',
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
    'skip-helm': Flags.boolean({
      description: 'initialize Kubernetes only; install the releases later with `upgrade execute --helm`',
    }),
    'skip-helm-wait': Flags.boolean({
      description:
        'install the Helm releases without waiting for them to become ready (and without rollback)',
    }),
    'helm-timeout': Flags.string({
      description: 'time each Helm release may take to become ready',
      default: DEFAULT_HELM_TIMEOUT,
    }),
  }

  async run(): Promise<InitResult> {
    const { flags } = await this.parse(Init)
    const result = await runInit({ ...flags, json: this.jsonEnabled() })
    for (const line of initSummary(result)) this.log(line)
    for (const line of initWarnings(result)) this.logToStderr(line)
    return result
  }
}
