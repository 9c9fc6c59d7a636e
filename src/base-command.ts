/** The base of every command: `--json`, workspace flag, and the one place errors are rendered. */
import { Command, Flags } from '@oclif/core'
import { chainMessage, exitCodeOf, hintOf, ExitCode } from './lib/errors/index.js'

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
    const message = chainMessage(err)
    const hint = hintOf(err)
    if (this.jsonEnabled()) {
      this.logJson({ error: { message, hint, exitCode: code } })
    }
    this.logToStderr(`Error: ${message}${hint ? `\nHint: ${hint}` : ''}`)
    if (code === ExitCode.Bug && process.env.CONSTELL_DEBUG !== '1' && err.stack) {
      this.logToStderr('This is a bug; run with CONSTELL_DEBUG=1 for the stack trace.')
    } else if (code === ExitCode.Bug && err.stack) {
      this.logToStderr(err.stack)
    }
    process.exitCode = code
  }
}
