/** The base of every command: `--json`, workspace flag, and the one place errors are rendered. */
import { confirm } from '@inquirer/prompts'
import { Command, Flags, type Interfaces } from '@oclif/core'
import { checkWorkspaceFolder } from './workspace-flag.js'
import { exitCodeOf, ExitCode, renderError, UsageError } from './lib/errors/index.js'
import { exitAfterGrace } from './lib/system/index.js'
import { canPrompt, ignoreClosedPipes, onInterrupt, processTerminal, promptOrAbort } from './lib/ui/index.js'

export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true

  static workspaceFlag = {
    workspace: Flags.directory({ char: 'C', description: 'workspace directory', default: '.' }),
  }

  private releaseInterrupt?: () => void

  /**
   * What a Ctrl-C or SIGTERM leaves behind, completing "<command> interrupted: …"; evaluated when
   * the signal arrives. A command that changes something says what; a flow that claims the
   * signals itself while it runs (init, upgrade execute, mini up) speaks instead of this.
   */
  protected interruptedState(): string {
    return 'nothing was changed'
  }

  /** Every command answers Ctrl-C (130) and SIGTERM (143) with one line on the state it leaves. */
  override async init(): Promise<void> {
    await super.init()
    ignoreClosedPipes()
    const name = (this.id ?? 'constellation').replaceAll(':', ' ')
    this.releaseInterrupt = onInterrupt(() => [`${name} interrupted: ${this.interruptedState()}`])
  }

  /** oclif's parse, then the checks every command's shared flags need (a file given as -C is exit 2). */
  protected override async parse<
    F extends Record<string, unknown>,
    B extends Record<string, unknown>,
    A extends Record<string, unknown>,
  >(options?: Interfaces.Input<F, B, A>, argv?: string[]): Promise<Interfaces.ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv)
    const { workspace } = parsed.flags as { workspace?: unknown }
    if (typeof workspace === 'string') await checkWorkspaceFolder(workspace)
    return parsed
  }

  /**
   * Asks before a change on a terminal; anywhere else (or with --json) only --yes may change
   * anything, and the refusal says so. `refusing` completes "refusing to … without confirmation".
   */
  protected async confirmChange(question: string, refusing: string): Promise<boolean> {
    if (this.jsonEnabled() || !canPrompt(processTerminal()))
      throw new UsageError(
        `refusing to ${refusing} without confirmation: ` +
          (this.jsonEnabled() ? '--json leaves no room for a prompt' : 'this is not an interactive terminal'),
        'review the values above, then rerun with --yes; nothing was changed',
      )
    return promptOrAbort((this.id ?? 'constellation').replaceAll(':', ' '), () =>
      confirm({ message: question, default: false }),
    )
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
    this.releaseInterrupt?.()
    exitAfterGrace()
    return super.finally(err)
  }
}
