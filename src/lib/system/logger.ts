/** The one logger: JSON lines for daemons, plain text for the CLI; never pass secrets to it. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
const LEVEL_ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }
export type LogFields = Record<string, unknown>

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  child(component: string, fields?: LogFields): Logger
}

export interface LoggerOptions {
  level?: LogLevel
  format?: 'json' | 'text'
  write?: (line: string) => void
  component?: string
  fields?: LogFields
  clock?: () => Date
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? 'info'
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'))
  const clock = opts.clock ?? (() => new Date())
  const base = { ...(opts.component ? { component: opts.component } : {}), ...opts.fields }
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (LEVEL_ORDER[lvl] < LEVEL_ORDER[level]) return
    const all = { ...base, ...fields }
    if (opts.format === 'json') {
      write(JSON.stringify({ time: clock().toISOString(), level: lvl, msg, ...all }, jsonSafe))
    } else {
      const extras = Object.entries(all)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v, jsonSafe)}`)
        .join(' ')
      write(`${lvl.toUpperCase()} ${msg}${extras ? ' ' + extras : ''}`)
    }
  }
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (component, fields) =>
      createLogger({
        ...opts,
        component: opts.component ? `${opts.component}.${component}` : component,
        fields: { ...opts.fields, ...fields },
      }),
  }
}

/** A logger that drops everything, for library callers that do not care. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} })

function jsonSafe(_key: string, value: unknown): unknown {
  if (value instanceof Error) return value.message
  if (typeof value === 'bigint') return value.toString()
  return value
}
