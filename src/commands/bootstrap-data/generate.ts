import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { UsageError } from '../../lib/errors/index.js'
import { parseDuration } from '../../lib/system/index.js'
import {
  DEFAULT_MAX_USER_DATA_BYTES,
  DEFAULT_STATE_DISK,
  DEFAULT_PRESIGN_SECONDS,
  OUTPUT_FORMATS,
  generateBootstrapData,
  renderGenerateResult,
  type GenerateResult,
  type OutputFormat,
} from '../../lib/bootstrapdata/index.js'
import { bootstrapDataDeps } from '../../wiring/bootstrap-data.js'

export default class BootstrapDataGenerate extends BaseCommand {
  static override description =
    'Render cloud-config or Ignition user data from Cluster API Cluster / Machine / KubeadmConfig objects'
  static override examples = [
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml -o out/',
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml --machine cp-0 --format ignition -o cp-0.ign',
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml --format attested-ignition -o out/',
    'AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… <%= config.bin %> bootstrap-data generate -f cluster.yaml --upload s3://bucket/userdata --s3-endpoint http://127.0.0.1:9000',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    file: Flags.string({
      char: 'f',
      description: 'multi-document YAML with Cluster, Machine(s), KubeadmConfig(s)',
      required: true,
    }),
    machine: Flags.string({
      description: 'only this Machine (default: every machine that can get data now)',
    }),
    format: Flags.string({
      description: "output format (default: each KubeadmConfig's spec.format)",
      options: [...OUTPUT_FORMATS],
    }),
    output: Flags.string({
      char: 'o',
      description: 'output file (one machine) or directory (default: the workspace)',
    }),
    'ca-dir': Flags.string({
      description: 'cluster CAs in kubeadm layout; generated when absent (default: <workspace>/pki)',
    }),
    kubeconfig: Flags.string({
      description: 'workload cluster kubeconfig: register the bootstrap token Secret there',
    }),
    'token-ttl': Flags.string({ description: 'bootstrap token lifetime (e.g. 30m, 24h)', default: '24h' }),
    upload: Flags.string({ description: 'offload the full data to s3://bucket/prefix and emit a stub' }),
    's3-endpoint': Flags.string({
      description: 'S3-compatible endpoint URL (path-style); credentials from the AWS_* environment',
    }),
    'max-user-data-bytes': Flags.integer({
      description: 'provider user-data limit; larger data needs --upload',
      default: DEFAULT_MAX_USER_DATA_BYTES,
      min: 1,
    }),
    'presign-expiry': Flags.string({
      description: 'lifetime of the presigned URL in the stub (max 7d)',
      default: '24h',
    }),
    'attestation-variant': Flags.string({
      description: 'attested formats: the node attestation variant',
      default: 'qemu-vtpm',
    }),
    'state-disk': Flags.string({
      description: "attested formats: the machines' LUKS2 state disk",
      default: DEFAULT_STATE_DISK.device,
    }),
  }

  async run(): Promise<GenerateResult> {
    const { flags } = await this.parse(BootstrapDataGenerate)
    const presignSeconds = parseDuration(flags['presign-expiry'], '--presign-expiry') / 1000
    if (presignSeconds > 7 * 24 * 3600)
      throw new UsageError('--presign-expiry may be at most 7d (S3 SigV4 limit)')
    const result = await generateBootstrapData(
      {
        inputFile: flags.file,
        workspace: flags.workspace,
        machine: flags.machine,
        format: flags.format as OutputFormat | undefined,
        output: flags.output,
        caDir: flags['ca-dir'],
        upload: flags.upload,
        maxUserDataBytes: flags['max-user-data-bytes'],
        presignSeconds: presignSeconds || DEFAULT_PRESIGN_SECONDS,
        kubeconfig: flags.kubeconfig,
        tokenTtlMs: parseDuration(flags['token-ttl'], '--token-ttl'),
        attestationVariant: flags['attestation-variant'],
        stateDisk: { device: flags['state-disk'] },
      },
      await bootstrapDataDeps({ s3Endpoint: flags['s3-endpoint'] }),
    )
    this.log(renderGenerateResult(result))
    return result
  }
}
