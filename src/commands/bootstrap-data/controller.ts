import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { parseDuration } from '../../lib/system/index.js'
import { runBootstrapProvider } from '../../wiring/bootstrap-provider.js'

export default class BootstrapDataController extends BaseCommand {
  static override description =
    "Run as a Cluster API bootstrap provider: reconcile the management cluster's KubeadmConfigs into bootstrap data Secrets (init for one control plane, join after it is up), refresh tokens of machines still booting; one replica leads through a Lease"
  static override examples = [
    '<%= config.bin %> bootstrap-data controller --kubeconfig management.kubeconfig',
    '<%= config.bin %> bootstrap-data controller --kubeconfig management.kubeconfig --api-version v1beta2 --token-ttl 15m',
  ]
  static override enableJsonFlag = false
  static override flags = {
    kubeconfig: Flags.string({
      description: 'the management cluster (where Cluster API runs)',
      required: true,
    }),
    'api-version': Flags.string({
      description: 'the Cluster API version to read and write (v1beta1: CAPI ≤ 1.10; v1beta2: 1.11+)',
      options: ['v1beta1', 'v1beta2'],
      default: 'v1beta1',
    }),
    'token-ttl': Flags.string({
      description: 'bootstrap token lifetime; refreshed until the machine joined',
      default: '15m',
    }),
    resync: Flags.string({
      description: 'reconcile everything at least this often (besides watch events)',
      default: '30s',
    }),
    'leader-election-namespace': Flags.string({
      description: 'namespace of the leader Lease',
      default: 'default',
    }),
    'leader-election-id': Flags.string({
      description: 'name of the leader Lease',
      default: 'constellation-bootstrap-provider',
    }),
    'lease-duration': Flags.string({
      description: 'how long a leader that stopped renewing keeps the Lease',
      default: '15s',
    }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(BootstrapDataController)
    const leaseDurationMs = parseDuration(flags['lease-duration'], '--lease-duration')
    await runBootstrapProvider({
      kubeconfig: flags.kubeconfig,
      apiVersion: flags['api-version'] as 'v1beta1' | 'v1beta2',
      tokenTtlMs: parseDuration(flags['token-ttl'], '--token-ttl'),
      resyncMs: parseDuration(flags.resync, '--resync'),
      leaseDurationMs,
      // controller-runtime's ratio: renew at a third of the duration, so two misses still keep it
      renewMs: Math.max(100, Math.floor(leaseDurationMs / 3)),
      leaseNamespace: flags['leader-election-namespace'],
      leaseName: flags['leader-election-id'],
    })
  }
}
