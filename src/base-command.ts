/** The base of every command: `--json`, workspace flag, and the one place errors are rendered. */
import { Command, Flags } from '@oclif/core'
import { exitCodeOf, ExitCode, renderError } from './lib/errors/index.js'
import { exitAfterGrace } from './lib/system/index.js'

export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true

  static workspaceFlag = {
    workspace: Flags.directory({ char: 'C', description: 'workspace directory', default: '.' }),
  }

  protected override async catch(err: Error & { oclif?: { exit?: number } }): Promise<void> {
    // oclif's own parse and flag errors carry their exit code (2 for usage).
    const own = exitCodeOf(err)
    const code = own === ExitCode.Bug && typeof err.oclif?.exit === 'number' ? err.oclif.exit : own
    if (code === 0) return
    const rendered = renderError(err, code)
    if (this.jsonEnabled()) this.logJson(rendered.json)
    for (const line of rendered.lines) this.logToStderr(line)
    process.exitCode = code
  }

  // Runs after catch has set the exit code: the result is out, so nothing may keep the process.
  protected override async finally(err: Error | undefined): Promise<unknown> {
    exitAfterGrace()
    return super.finally(err)
  }
}
