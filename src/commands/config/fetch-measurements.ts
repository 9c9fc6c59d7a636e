import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import {
  offerMeasurementsUpdate,
  planFetchedMeasurements,
  signedSource,
  type FetchPlan,
} from '../../lib/config/index.js'
import { workspacePaths } from '../../lib/paths.js'
import { httpGet, parseDuration } from '../../lib/system/index.js'

export type FetchMeasurementsResult = Omit<FetchPlan, 'config'> & { config: string; written: boolean }

export default class ConfigFetchMeasurements extends BaseCommand {
  static override description =
    "Download measurements the image builder signed (Constellation's measurements JSON and its cosign-form signature), verify the signature against the public key the config pins (measurementsPublicKey) or --public-key, never one from the server, and write this workspace's variant's values into the config after showing them"
  static override examples = [
    '<%= config.bin %> config fetch-measurements --url https://images.example/v1.2.0/measurements.json',
    '<%= config.bin %> config fetch-measurements -C my-cluster --url file:///media/usb/measurements.json --public-key builder.pub --yes --json',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    url: Flags.string({
      char: 'u',
      description:
        'URL of the measurements JSON (http, https, or file:// for air gaps); required: this tool has no image catalogue to derive it from',
      required: true,
    }),
    'signature-url': Flags.string({
      char: 's',
      description: 'URL of its signature (default: the --url with .sig appended)',
    }),
    'public-key': Flags.string({
      description:
        "a PEM file with the image builder's public key, instead of the config's measurementsPublicKey",
    }),
    yes: Flags.boolean({ char: 'y', description: 'write without asking' }),
    timeout: Flags.string({
      description: 'give up on each download after this long, e.g. 30s',
      default: '60s',
    }),
  }

  protected override interruptedState(): string {
    return 'the config is as it was, or fully updated (it is replaced in one step)'
  }

  async run(): Promise<FetchMeasurementsResult> {
    const { flags } = await this.parse(ConfigFetchMeasurements)
    const totalTimeoutMs = parseDuration(flags.timeout, '--timeout')
    const plan = await planFetchedMeasurements(
      {
        configFile: workspacePaths(flags.workspace).config,
        url: flags.url,
        signatureUrl: flags['signature-url'],
        publicKeyFile: flags['public-key'],
        cwd: process.cwd(),
        limits: { totalTimeoutMs, idleTimeoutMs: Math.min(totalTimeoutMs, 20_000) },
      },
      httpGet,
    )
    const written = await offerMeasurementsUpdate(
      plan.config,
      plan.pcrs,
      {
        source: signedSource(plan.url, plan.image, plan.variant),
        notes: plan.notes,
        during: 'the measurements were fetched',
      },
      {
        log: (text) => this.log(text),
        confirm: (question) => this.confirmChange(question, 'change the config'),
        yes: flags.yes,
      },
    )
    return { ...plan, config: plan.config.file, written }
  }
}
