import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { measurementsFromConfig } from '../lib/attestation/index.js'
import { loadConfig } from '../lib/config/index.js'
import { CliError } from '../lib/errors/index.js'
import { workspacePaths } from '../lib/paths.js'
import { renderVerifyReport, verifyNode, type VerifyReport } from '../lib/verify/index.js'

export default class Verify extends BaseCommand {
  static override description =
    "Attest a node with a fresh nonce against the workspace config's measurements (exit 0 only when trusted, 4 when attestation failed, 3 when unreachable)"
  static override examples = [
    '<%= config.bin %> verify --node-endpoint 10.0.0.5:30081',
    '<%= config.bin %> verify -C my-cluster --node-endpoint 10.0.0.5:30081 --cluster-id 3f1c…',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    'node-endpoint': Flags.string({
      description: 'HOST:PORT of the node verification service',
      required: true,
    }),
    'cluster-id': Flags.string({
      description: 'hex cluster ID; PCR 15 must show that this node belongs to it',
    }),
  }

  async run(): Promise<VerifyReport> {
    const { flags } = await this.parse(Verify)
    const config = await loadConfig(workspacePaths(flags.workspace).config)
    const measurements = config.attestation.qemuVTPM?.measurements
    if (!measurements)
      throw new CliError('the config has no attestation.qemuVTPM.measurements to verify against')
    const outcome = await verifyNode({
      endpoint: flags['node-endpoint'],
      variant: 'qemu-vtpm',
      measurements: measurementsFromConfig(measurements),
      clusterId: flags['cluster-id'],
    })
    if (outcome.report && !this.jsonEnabled()) this.log(renderVerifyReport(outcome.report))
    if (outcome.error || !outcome.report)
      throw outcome.error ?? new CliError('verification produced no result')
    return outcome.report
  }
}
