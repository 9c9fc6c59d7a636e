import { Flags } from '@oclif/core'
import { attestTimeoutFlag } from '../../attest-flags.js'
import { BaseCommand } from '../../base-command.js'
import {
  measurementNotes,
  nodeSource,
  offerMeasurementsUpdate,
  planMeasurementsUpdate,
  readConfigMeasurements,
  type MeasurementUpdate,
} from '../../lib/config/index.js'
import { workspacePaths } from '../../lib/paths.js'
import { parseAttestTimeout, readNodePcrs, verifyServiceTarget } from '../../lib/verify/index.js'

export interface MeasurementsResult {
  config: string
  endpoint: string
  variant: string
  /** How far these values can be trusted: as far as the operator trusts the node. */
  trust: 'trust-on-first-use'
  written: boolean
  pcrs: MeasurementUpdate[]
  notes: string[]
}

export default class ConfigMeasurements extends BaseCommand {
  static override description =
    "Trust on first use: attest a node you trust (a golden image) with a fresh nonce and write its PCR values into the config's measurements (PCR 15 stays zero). Nothing but your trust in that node vouches for them; `config fetch-measurements` takes values the image builder signed instead"
  static override examples = [
    '<%= config.bin %> config measurements -e 10.0.0.5',
    '<%= config.bin %> config measurements -C my-cluster -e 10.0.0.5:30081 --yes --json',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    'node-endpoint': Flags.string({
      char: 'e',
      description:
        "HOST[:PORT] of the trusted node's verification service (`constellation verifyservice`; port 30081 unless given)",
      required: true,
    }),
    yes: Flags.boolean({ char: 'y', description: 'write without asking' }),
    ...attestTimeoutFlag,
  }

  protected override interruptedState(): string {
    return 'the config is as it was, or fully updated (it is replaced in one step)'
  }

  async run(): Promise<MeasurementsResult> {
    const { flags } = await this.parse(ConfigMeasurements)
    const timeoutMs = parseAttestTimeout(flags.timeout)
    const endpoint = verifyServiceTarget(flags['node-endpoint'], '--node-endpoint')
    const config = await readConfigMeasurements(workspacePaths(flags.workspace).config)
    const node = await readNodePcrs({
      endpoint,
      variant: config.attestation.variant,
      validatorOptions: config.attestation.options,
      timeoutMs,
      debug: process.env.CONSTELL_DEBUG === '1',
    })
    const pcrs = planMeasurementsUpdate(config.measurements, node.pcrs)
    const written = await offerMeasurementsUpdate(
      config,
      pcrs,
      { source: nodeSource(endpoint), during: 'the node was being attested' },
      {
        log: (text) => this.log(text),
        confirm: (question) => this.confirmChange(question, 'change the config'),
        yes: flags.yes,
      },
    )
    const notes = measurementNotes(pcrs)
    return {
      config: config.file,
      endpoint,
      variant: node.variant,
      trust: 'trust-on-first-use',
      written,
      pcrs,
      notes,
    }
  }
}
