import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { configSchema, stateSchema } from '../../lib/config/index.js'

export default class ConfigSchema extends BaseCommand {
  static override enableJsonFlag = false
  static override description =
    'Print the JSON Schema of constellation-conf.yaml (or the state file) for editors'
  static override examples = ['<%= config.bin %> config schema > constellation-conf.schema.json']
  static override flags = { state: Flags.boolean({ description: 'print the state file schema instead' }) }

  async run(): Promise<void> {
    const { flags } = await this.parse(ConfigSchema)
    this.log(JSON.stringify(flags.state ? stateSchema : configSchema, null, 2))
  }
}
