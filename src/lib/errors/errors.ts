/** Typed, user-facing failures and the exit codes they map to; rendered once by BaseCommand. */
export const ExitCode = {
  Ok: 0,
  Failure: 1,
  Usage: 2,
  Unreachable: 3,
  AttestationFailed: 4,
  Bug: 70,
} as const
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

export interface CliErrorOptions {
  /** Default ExitCode.Failure (1). */
  exitCode?: number
  /** What the user can do about it. */
  hint?: string
  cause?: unknown
  /** Structured result that `--json` prints beside the error (e.g. every problem found, a report). */
  data?: Record<string, unknown>
}

/** Something the user can fix: the message says what failed and why, the hint what to do. */
export class CliError extends Error {
  readonly exitCode: number
  readonly hint?: string
  readonly data?: Record<string, unknown>

  constructor(message: string, { exitCode = ExitCode.Failure, hint, cause, data }: CliErrorOptions = {}) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'CliError'
    this.exitCode = exitCode
    this.hint = hint
    this.data = data
  }
}

/** Wrong flags or arguments: exit code 2. */
export class UsageError extends CliError {
  constructor(message: string, hint?: string) {
    super(message, { exitCode: ExitCode.Usage, hint })
    this.name = 'UsageError'
  }
}

/**
 * An error the outside world caused without our code deciding it (a program that failed, or that
 * is not installed): a failure (1), never "a bug" (70), also where no layer wrapped it.
 */
export interface ExternalFailure {
  readonly external: true
  /** What to do, when there is something (install the program). */
  readonly externalHint?: string
}

export const isExternalFailure = (err: unknown): err is Error & ExternalFailure =>
  err instanceof Error && (err as Partial<ExternalFailure>).external === true

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))

/** The message of an error and of every cause below it, joined like Go's wrapped errors. */
export function chainMessage(err: unknown): string {
  const parts: string[] = []
  let cur: unknown = err
  for (let depth = 0; cur !== undefined && depth < 10; depth++) {
    const msg = messageOf(cur)
    if (msg && !parts.some((p) => p.endsWith(msg))) parts.push(msg)
    cur = cur instanceof Error ? cur.cause : undefined
  }
  return parts.join(': ')
}

export function exitCodeOf(err: unknown): number {
  let external = false
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 10; cur = cur.cause, depth++) {
    if (cur instanceof CliError) return cur.exitCode
    external ||= isExternalFailure(cur)
  }
  return external ? ExitCode.Failure : ExitCode.Bug
}

export function hintOf(err: unknown): string | undefined {
  let external: string | undefined
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 10; cur = cur.cause, depth++) {
    if (cur instanceof CliError && cur.hint) return cur.hint
    if (isExternalFailure(cur)) external ??= cur.externalHint
  }
  return external
}

function dataOf(err: unknown): Record<string, unknown> | undefined {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 10; cur = cur.cause, depth++) {
    if (cur instanceof CliError && cur.data) return cur.data
  }
  return undefined
}

export interface RenderedError {
  /** Lines for stderr: the message chain, the hint, and for bugs how to see (or the) stack. */
  lines: string[]
  /** The `--json` form: the error's structured data, if any, beside the error itself. */
  json: Record<string, unknown> & { error: { message: string; hint?: string; exitCode: number } }
}

/** How every entry point shows an error: one rendering for the CLI framework and for the bare daemon. */
export function renderError(
  err: unknown,
  exitCode = exitCodeOf(err),
  debug = process.env.CONSTELL_DEBUG === '1',
): RenderedError {
  const message = chainMessage(err)
  const hint = hintOf(err)
  const lines = [`Error: ${message}`, ...(hint ? [`Hint: ${hint}`] : [])]
  const stack = err instanceof Error ? err.stack : undefined
  if (exitCode === ExitCode.Bug && stack)
    lines.push(debug ? stack : 'This is a bug; run with CONSTELL_DEBUG=1 for the stack trace.')
  return { lines, json: { ...dataOf(err), error: { message, hint, exitCode } } }
}

export function isErrnoException(err: unknown, code?: string): err is NodeJS.ErrnoException {
  return (
    err instanceof Error &&
    'code' in err &&
    (code === undefined || (err as NodeJS.ErrnoException).code === code)
  )
}
