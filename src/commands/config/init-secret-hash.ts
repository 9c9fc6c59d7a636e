import { BaseCommand } from '../../base-command.js'
import { initSecretHashFor } from '../../lib/config/index.js'

export default class ConfigInitSecretHash extends BaseCommand {
  static override description =
    "Print the bcrypt hash of the workspace's init secret, for the node config's initSecretHash (the secret itself never leaves the workspace)"
  static override examples = ['<%= config.bin %> config init-secret-hash -C ./cluster']
  static override flags = { ...BaseCommand.workspaceFlag }

  async run(): Promise<{ initSecretHash: string }> {
    const { flags } = await this.parse(ConfigInitSecretHash)
    const result = await initSecretHashFor(flags.workspace)
    this.log(result.initSecretHash)
    return result
  }
}
