import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { ATTESTATION_VARIANTS, type AttestationVariant } from '../../lib/attestation/index.js'
import {
  generateWorkspace,
  PROVIDER_VARIANTS,
  PROVIDERS,
  type GenerateResult,
  type Provider,
} from '../../lib/config/index.js'
import { DEFAULT_KUBERNETES_MINOR } from '../../lib/versions/index.js'

export default class ConfigGenerate extends BaseCommand {
  static override description =
    'Write a new constellation-conf.yaml and constellation-state.yaml (never overwrites)'
  static override examples = [
    '<%= config.bin %> config generate qemu',
    '<%= config.bin %> config generate qemu -k v1.32 -C ./cluster',
    '<%= config.bin %> config generate azure --attestation azure-tdx',
  ]
  static override args = {
    provider: Args.string({
      description: 'infrastructure provider',
      options: [...PROVIDERS],
      required: true,
    }),
  }
  static override flags = {
    ...BaseCommand.workspaceFlag,
    kubernetes: Flags.string({
      char: 'k',
      description: 'Kubernetes version (MAJOR.MINOR resolves to the supported patch)',
      default: DEFAULT_KUBERNETES_MINOR,
    }),
    attestation: Flags.string({
      char: 'a',
      description: `attestation variant; ${Object.entries(PROVIDER_VARIANTS)
        .map(([provider, variants]) => `${provider}: ${variants.join(', ')}`)
        .join('; ')} (the first is the default)`,
      options: [...ATTESTATION_VARIANTS],
    }),
    name: Flags.string({ description: 'cluster name', default: 'constell' }),
    endpoint: Flags.string({
      description: 'address of the first node (host or host:port)',
      default: '127.0.0.1',
    }),
  }

  protected override interruptedState(): string {
    return 'if it had begun writing, constellation-conf.yaml and constellation-state.yaml may be there, the last perhaps cut short; it never overwrites, so remove them before running it again'
  }

  async run(): Promise<GenerateResult> {
    const { args, flags } = await this.parse(ConfigGenerate)
    const result = await generateWorkspace({
      workspace: flags.workspace,
      provider: args.provider as Provider,
      kubernetes: flags.kubernetes,
      variant: flags.attestation as AttestationVariant | undefined,
      name: flags.name,
      endpoint: flags.endpoint,
    })
    this.log(
      `Config generated for Kubernetes ${result.kubernetesVersion}:\n  ${result.config}\n  ${result.state}`,
    )
    this.log(
      'Next: learn your node image measurements from a node you trust with `constellation config measurements -e HOST`, then run `constellation config validate`.',
    )
    return result
  }
}
