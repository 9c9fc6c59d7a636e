import { Flags } from '@oclif/core'
import { attestTimeoutFlag } from '../attest-flags.js'
import { BaseCommand } from '../base-command.js'
import { loadConfig, validatorSettingsForConfig } from '../lib/config/index.js'
import { CliError } from '../lib/errors/index.js'
import { writeFileAtomic } from '../lib/system/index.js'
import { workspacePaths } from '../lib/paths.js'
import {
  parseAttestTimeout,
  renderVerifyReport,
  resolveVerifyTarget,
  VERIFY_PROTOCOLS,
  verifyNode,
  type VerifyReport,
} from '../lib/verify/index.js'

export default class Verify extends BaseCommand {
  static override description =
    "Attest a node with a fresh nonce against the workspace config's attestation (its variant, measurements and, for tpm-ek, manufacturer roots) and the state's cluster ID (exit 0 only when trusted, 4 when attestation failed, 3 when unreachable)"
  static override examples = [
    '<%= config.bin %> verify -C my-cluster',
    '<%= config.bin %> verify -e 10.0.0.5',
    '<%= config.bin %> verify -e 10.0.0.5:30081 --cluster-id 3f1c… --json',
    '<%= config.bin %> verify -e 10.0.0.5 --raw attestation.json',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    'node-endpoint': Flags.string({
      char: 'e',
      description:
        "HOST[:PORT] of the node's verification service (port 30081 unless given; IPv6 in brackets); default: the host of the state's infrastructure.clusterEndpoint",
    }),
    'cluster-id': Flags.string({
      description:
        "hex cluster ID; PCR 15 must show that the node belongs to it; default: the state's clusterValues.clusterID",
    }),
    raw: Flags.string({
      description:
        'write the attestation document the node sent (JSON, as Constellation encodes it) to this file, trusted or not',
    }),
    protocol: Flags.string({
      options: [...VERIFY_PROTOCOLS],
      default: 'atls',
      description:
        "how to ask the node: attested TLS, or Constellation's plain-gRPC verify.API/GetAttestation (the document is checked the same way against a fresh nonce)",
    }),
    ...attestTimeoutFlag,
  }

  async run(): Promise<VerifyReport> {
    const { flags } = await this.parse(Verify)
    const timeoutMs = parseAttestTimeout(flags.timeout)
    const paths = workspacePaths(flags.workspace)
    const { variant, measurements, options } = validatorSettingsForConfig(await loadConfig(paths.config))
    const target = await resolveVerifyTarget(
      { nodeEndpoint: flags['node-endpoint'], clusterId: flags['cluster-id'] },
      paths.state,
    )
    const outcome = await verifyNode({
      endpoint: target.endpoint,
      variant,
      validatorOptions: options,
      measurements,
      clusterId: target.clusterId,
      timeoutMs,
      debug: process.env.CONSTELL_DEBUG === '1',
      ...(flags.raw !== undefined && { saveDocument: saveTo(flags.raw) }),
      protocol: flags.protocol === 'get-attestation' ? 'get-attestation' : 'atls',
    })
    if (outcome.report && !this.jsonEnabled()) {
      if (target.clusterIdFrom === 'state') this.log(`Cluster ID from ${paths.state}: ${target.clusterId}`)
      this.log(renderVerifyReport(outcome.report))
    }
    if (outcome.error || !outcome.report)
      throw outcome.error ?? new CliError('verification produced no result')
    return outcome.report
  }
}

/** The document holds no secret (a quote, public keys, the event log): readable like any report. */
const saveTo = (file: string) => (document: Buffer) => writeFileAtomic(file, document, 0o644)
