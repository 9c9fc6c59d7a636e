import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { UsageError } from '../../lib/errors/index.js'
import { parseDuration } from '../../lib/system/index.js'
import {
  DEFAULT_MAX_USER_DATA_BYTES,
  DEFAULT_STATE_DISK,
  DEFAULT_PRESIGN_SECONDS,
  MAX_PRESIGN_SECONDS,
  OUTPUT_FORMATS,
  generateBootstrapData,
  renderGenerateResult,
  type GenerateResult,
  type OutputFormat,
} from '../../lib/bootstrapdata/index.js'
import { bootstrapDataDeps } from '../../wiring/bootstrap-data.js'

export default class BootstrapDataGenerate extends BaseCommand {
  static override description =
    'Render cloud-config or Ignition user data from Cluster API Cluster / Machine / KubeadmConfig objects\n\n' +
    'With --upload the full data goes to S3 and the machine gets a stub that names s3://bucket/key: the node ' +
    'fetches it with its instance role (Ignition natively; cloud-config through a boothook that needs the AWS CLI ' +
    'in the image), so reading the user data gives no keys. Delete each object once its node has read it: CAPA ' +
    'deletes it when the Machine has a nodeRef, a cloud-config node deletes it itself when its role allows ' +
    's3:DeleteObject, and a bucket lifecycle rule (e.g. expire after 1 day) is the fallback. --presigned-url puts a ' +
    'bearer URL in the stub instead: anyone who can read the user data can fetch the data until it expires.'
  static override examples = [
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml -o out/',
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml --machine cp-0 --format ignition -o cp-0.ign',
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml --format attested-ignition -o out/',
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml --kubeconfig management.kubeconfig -o out/',
    'AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… <%= config.bin %> bootstrap-data generate -f cluster.yaml --upload s3://bucket/userdata --s3-endpoint http://127.0.0.1:9000',
    '<%= config.bin %> bootstrap-data generate -f cluster.yaml --upload s3://bucket/userdata --presigned-url --presign-expiry 5m',
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
      description:
        "management cluster: the CAs are the Cluster's CAPI Secrets there (<cluster>-ca, -etcd, -proxy, -sa; created for init when missing), the token goes to the workload cluster of <cluster>-kubeconfig",
      exclusive: ['ca-dir'],
    }),
    'workload-kubeconfig': Flags.string({
      description:
        'register the bootstrap token Secret in this cluster (default: a Secret manifest beside the output)',
    }),
    'token-ttl': Flags.string({
      description:
        'bootstrap token lifetime (as CAPI: short, so a leaked token is soon useless; `bootstrap-data refresh-token` extends it for a machine still booting)',
      default: '15m',
    }),
    upload: Flags.string({ description: 'offload the full data to s3://bucket/prefix and emit a stub' }),
    's3-endpoint': Flags.string({
      description: 'S3-compatible endpoint URL (path-style); credentials from the AWS_* environment',
    }),
    'max-user-data-bytes': Flags.integer({
      description: 'provider user-data limit; larger data needs --upload',
      default: DEFAULT_MAX_USER_DATA_BYTES,
      min: 1,
    }),
    'presigned-url': Flags.boolean({
      description:
        'put a presigned HTTPS URL in the stub instead of s3:// (no instance role needed; anyone who can read the user data can fetch the data, keys included, until it expires)',
      dependsOn: ['upload'],
    }),
    'presign-expiry': Flags.string({
      description: 'with --presigned-url: lifetime of the URL (default 10m, max 7d)',
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

  protected override interruptedState(): string {
    return 'its files are written only at the very end; if that had begun, some may be there, the last perhaps cut short: it never overwrites, so remove them before running it again'
  }

  async run(): Promise<GenerateResult> {
    const { flags } = await this.parse(BootstrapDataGenerate)
    const presignedUrlSeconds = this.presignedUrlSeconds(flags['presigned-url'], flags['presign-expiry'])
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
        presignedUrlSeconds,
        managementKubeconfig: flags.kubeconfig,
        workloadKubeconfig: flags['workload-kubeconfig'],
        tokenTtlMs: parseDuration(flags['token-ttl'], '--token-ttl'),
        attestationVariant: flags['attestation-variant'],
        stateDisk: { device: flags['state-disk'] },
      },
      await bootstrapDataDeps({ s3Endpoint: flags['s3-endpoint'] }),
    )
    this.log(renderGenerateResult(result))
    return result
  }

  /** undefined: instance-role stubs. A presigned URL is opt-in and said out loud (stderr). */
  private presignedUrlSeconds(presigned: boolean, expiry: string | undefined): number | undefined {
    if (!presigned) {
      if (expiry !== undefined) throw new UsageError('--presign-expiry needs --presigned-url')
      return undefined
    }
    const seconds =
      expiry === undefined ? DEFAULT_PRESIGN_SECONDS : parseDuration(expiry, '--presign-expiry') / 1000
    if (seconds > MAX_PRESIGN_SECONDS)
      throw new UsageError('--presign-expiry may be at most 7d (S3 SigV4 limit)')
    if (seconds < 1) throw new UsageError('--presign-expiry must be at least 1s')
    // Straight to stderr: oclif's warn and logToStderr are silent under --json, and this must be
    // seen in every output mode (stdout stays the JSON result).
    process.stderr.write(
      `Warning: --presigned-url: anyone who can read the machines' user data can fetch the full bootstrap data, CA keys included, until the URL expires (in ${expiry ?? '10m'}); without the flag the stub names s3:// and the node uses its instance role\n`,
    )
    return seconds
  }
}
