/** Terminal presentation: whether to be interactive, tables, and listr2 progress. */
import type { DefaultRenderer, ListrTask, SimpleRenderer } from 'listr2'
import { runStepsSilently, type Progress } from '../system/index.js'

type Task<Ctx> = ListrTask<Ctx, typeof DefaultRenderer | typeof SimpleRenderer, typeof SimpleRenderer>

export interface Terminal {
  stdoutIsTTY: boolean
  stdinIsTTY: boolean
  env: NodeJS.ProcessEnv
}

export const processTerminal = (): Terminal => ({
  stdoutIsTTY: Boolean(process.stdout.isTTY),
  stdinIsTTY: Boolean(process.stdin.isTTY),
  env: process.env,
})

/** Spinners only on a TTY and when CONSTELL_NO_SPINNER is unset; plain lines otherwise. */
export function useSpinner(t: Terminal): boolean {
  return t.stdoutIsTTY && !t.env.CONSTELL_NO_SPINNER
}

/** Prompts only when a person can answer them. */
export function canPrompt(t: Terminal): boolean {
  return t.stdinIsTTY && t.stdoutIsTTY
}

/** Runs tasks with listr2: a live view on a TTY, one plain line per step otherwise. */
export async function runTasks<Ctx>(
  tasks: Task<Ctx>[],
  ctx: Ctx,
  t: Terminal,
  opts: { silent?: boolean } = {},
): Promise<Ctx> {
  const { Listr } = await import('listr2') // loaded lazily: most commands never show progress
  const list = new Listr<Ctx, 'default' | 'simple' | 'silent', 'simple'>(tasks, {
    ctx,
    // silent: for --json, where stdout carries only the result object
    renderer: opts.silent ? 'silent' : useSpinner(t) ? 'default' : 'simple',
    fallbackRenderer: 'simple',
    exitOnError: true,
    // Signals are the command's (onInterrupt): listr2's own handler exits 127 without a word.
    registerSignalListeners: false,
    rendererOptions: { collapseErrors: false },
  })
  return list.run()
}

/** How a command shows a lib operation's steps: listr2 as runTasks does, nothing when `quiet` (--json). */
export function stepProgress(t: Terminal, opts: { quiet?: boolean } = {}): Progress {
  if (opts.quiet) return runStepsSilently
  return (steps) =>
    runTasks(
      steps.map((s) => ({
        title: s.title,
        // listr2 shows a task's output under its title ("› …"), on a terminal and in plain lines alike
        task: (_ctx: unknown, task: { output: string }) => s.run((line) => (task.output = line)),
      })),
      {},
      t,
    ).then(() => {})
}

/**
 * Steps as plain lines through `print`, for output that is itself a list of lines (mini up's "•"
 * progress): each title, and each line a step reports under it, indented. Once `signal` is
 * aborted no further step starts (nor says it does).
 */
export function linesProgress(
  print: (line: string) => void,
  opts: { indent?: string; signal?: AbortSignal } = {},
): Progress {
  const indent = opts.indent ?? '  '
  return async (steps) => {
    for (const step of steps) {
      opts.signal?.throwIfAborted()
      print(`${indent}${step.title}`)
      await step.run((line) => print(`${indent}  ${line}`))
    }
  }
}

/**
 * Draws each frame over the last one on a terminal: up as many rows as the last frame took (long
 * lines wrap at `columns`), clear to the end of the screen, draw. A frame taller than the screen
 * scrolls, and the next redraw then starts lower: the cost of keeping the scrollback.
 */
export function inPlace(
  write: (text: string) => void,
  columns: () => number | undefined,
): (frame: string) => void {
  let rows = 0
  return (frame) => {
    const width = columns()
    write(`${rows > 0 ? `\u001b[${rows}A\u001b[J` : ''}${frame}\n`)
    rows = frame
      .split('\n')
      .reduce((n, line) => n + (width && line.length > width ? Math.ceil(line.length / width) : 1), 0)
  }
}

export function renderTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(headers), ...rows.map(line)].join('\n')
}
