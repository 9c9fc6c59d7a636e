import { BaseCommand } from '../../base-command.js'
import { CliError } from '../../lib/errors/index.js'
import { formatFinding, validateWorkspace, type WorkspaceValidation } from '../../lib/config/index.js'
import { counted } from '../../lib/system/index.js'
import { listLines } from '../../lib/yaml/index.js'

export default class ConfigValidate extends BaseCommand {
  static override description =
    'Check the workspace config and state: unknown keys, types, versions, with file:line for each problem'
  static override flags = { ...BaseCommand.workspaceFlag }

  async run(): Promise<WorkspaceValidation> {
    const { flags } = await this.parse(ConfigValidate)
    const result = await validateWorkspace(flags.workspace)
    if (!result.valid) {
      const lines = result.files.flatMap((f) => f.problems).map(formatFinding)
      throw new CliError(
        `the workspace is not valid (${counted(lines.length, 'problem')}):\n${listLines(lines)}`,
        { data: { ...result } },
      )
    }
    for (const w of result.files.flatMap((f) => f.warnings)) this.logToStderr(`Warning: ${formatFinding(w)}`)
    for (const f of result.files) this.log(`${f.file}: valid`)
    return result
  }
}
