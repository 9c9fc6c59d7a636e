import { randomBytes } from 'node:crypto'
import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { initSecretHashFor } from '../../lib/config/index.js'
import { UsageError } from '../../lib/errors/index.js'
import { parseDuration } from '../../lib/system/index.js'
import {
  DEFAULT_MAX_USER_DATA_BYTES,
  DEFAULT_STATE_DISK,
  DEFAULT_PRESIGN_SECONDS,
  OUTPUT_FORMATS,
  createS3Store,
  generateBootstrapData,
  loadTemplates,
  readInputFile,
  registerTokenSecret,
  type GenerateResult,
  type OutputFormat,
} from '../../lib/bootstrapdata/index.js'

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
    'state-disk-key-file': Flags.string({
      description: "attested formats: the file holding the state disk's initial passphrase on the machine",
      default: DEFAULT_STATE_DISK.initialKeyFile,
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
        stateDisk: { device: flags['state-disk'], initialKeyFile: flags['state-disk-key-file'] },
      },
      {
        now: () => new Date(),
        randomBytes,
        readInput: readInputFile,
        templates: await loadTemplates(),
        objectStore: () => createS3Store({ endpoint: flags['s3-endpoint'] }),
        registerToken: registerTokenSecret,
        initSecretHash: async (workspace) => (await initSecretHashFor(workspace)).initSecretHash,
      },
    )
    this.log(renderResult(result))
    return result
  }
}

function renderResult(r: GenerateResult): string {
  const lines = r.machines.map((m) => {
    const offload = m.offload ? ` → offloaded to ${m.offload.object} (stub ${m.offload.stubBytes} bytes)` : ''
    return `${m.machine} (${m.role}, ${m.format}): ${m.file}, ${m.bytes} bytes${offload}`
  })
  for (const w of r.waiting) lines.push(`${w.machine}: waiting, ${w.reason}`)
  if (r.caFilesCreated.length > 0) lines.push(`Generated the cluster CAs in ${r.caDir}`)
  if (r.adminKubeconfig) lines.push(`Admin kubeconfig: ${r.adminKubeconfig}`)
  if (r.tokenSecret) {
    const where = r.tokenSecret.registered
      ? 'registered in the workload cluster'
      : `written to ${r.tokenSecret.file}; apply it to the workload cluster`
    lines.push(
      `Bootstrap token Secret kube-system/${r.tokenSecret.name} (expires ${r.tokenSecret.expires}) ${where}`,
    )
  }
  return lines.join('\n')
}
