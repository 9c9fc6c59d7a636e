/**
 * systemd unit files as a mini node's supervisor reads them: the keys the project's units (and the
 * simulator's) use, with systemd's meaning. A key it does not implement is refused, naming file and
 * line, so a unit that needs more fails loudly instead of running differently than on a machine.
 */
import { parseExecStart } from './exec-start.js'

export const RESTART_POLICIES = ['no', 'on-failure', 'always'] as const
export type RestartPolicy = (typeof RESTART_POLICIES)[number]
export const SERVICE_TYPES = ['simple', 'oneshot'] as const
export type ServiceType = (typeof SERVICE_TYPES)[number]

export interface UnitSpec {
  name: string
  description?: string
  /** Ordering: this unit starts once these (when they are being started too) have started. */
  after: string[]
  before: string[]
  /** Started with this unit; Requires also fails this unit when one of them fails. */
  wants: string[]
  requires: string[]
  /** Every path must exist when the unit starts, or it is skipped (not a failure). */
  conditionPathExists: string[]
  type: ServiceType
  execStart: string[]
  /** ExecStart=-…: a non-zero exit status counts as success. */
  ignoreFailure: boolean
  environment: Record<string, string>
  restart: RestartPolicy
  restartMs: number
  remainAfterExit: boolean
  /** Undefined: no limit (systemd's `infinity`, and the default for oneshot units). */
  startTimeoutMs?: number
  stopTimeoutMs: number
  killSignal: NodeJS.Signals
  umask: string
  /** `[Install] WantedBy=multi-user.target`: an enabled unit the node starts at boot. */
  startsAtBoot: boolean
}

/** systemd's defaults: DefaultTimeoutStopSec=90s, RestartSec=100ms, DefaultTimeoutStartSec=90s. */
const DEFAULT_STOP_TIMEOUT_MS = 90_000
const DEFAULT_START_TIMEOUT_MS = 90_000
const DEFAULT_RESTART_MS = 100
const BOOT_TARGET = 'multi-user.target'

type Handler = (unit: Draft, value: string, fail: (why: string) => never) => void
type Draft = Omit<UnitSpec, 'startTimeoutMs'> & {
  startTimeoutMs?: number | 'default'
  execStartLine?: { value: string; fail: (why: string) => never }
}

const list = (field: 'after' | 'before' | 'wants' | 'requires' | 'conditionPathExists'): Handler => {
  return (unit, value) => unit[field].push(...value.split(/\s+/).filter(Boolean))
}
const ignored: Handler = () => {}
const journalOnly: Handler = (_unit, value, fail) => {
  if (value !== 'journal') fail('only "journal" is implemented (the unit\'s log file)')
}

const KEYS: Record<string, Record<string, Handler>> = {
  Unit: {
    Description: (u, v) => (u.description = v),
    Documentation: ignored,
    After: list('after'),
    Before: list('before'),
    Wants: list('wants'),
    Requires: list('requires'),
    ConditionPathExists: list('conditionPathExists'),
    FailureAction: (_u, v, fail) => {
      if (v !== 'none') fail('only FailureAction=none is implemented (a failed unit stays failed)')
    },
  },
  Service: {
    Type: (u, v, fail) => (u.type = oneOf(SERVICE_TYPES, v, fail)),
    // expanded once the whole file is read: Environment= may come after it
    ExecStart: (u, v, fail) => (u.execStartLine = { value: v, fail }),
    Environment: (u, v, fail) => {
      for (const pair of v.split(/\s+/).filter(Boolean)) {
        const eq = pair.indexOf('=')
        if (eq <= 0 || /["']/.test(pair)) fail('Environment= takes unquoted KEY=VALUE pairs here')
        u.environment[pair.slice(0, eq)] = pair.slice(eq + 1)
      }
    },
    Restart: (u, v, fail) => (u.restart = oneOf(RESTART_POLICIES, v, fail)),
    RestartSec: (u, v, fail) => (u.restartMs = timeSpan(v, fail) ?? fail('a restart delay is finite')),
    RemainAfterExit: (u, v, fail) => (u.remainAfterExit = yesNo(v, fail)),
    StandardOutput: journalOnly,
    StandardError: journalOnly,
    TimeoutStartSec: (u, v, fail) => (u.startTimeoutMs = timeSpan(v, fail)),
    TimeoutStopSec: (u, v, fail) => (u.stopTimeoutMs = timeSpan(v, fail) ?? 2 ** 31 - 1),
    KillSignal: (u, v, fail) => {
      if (!/^SIG[A-Z0-9]+$/.test(v)) fail('a signal name like SIGTERM')
      u.killSignal = v as NodeJS.Signals
    },
    UMask: (u, v, fail) => {
      if (!/^0?[0-7]{3}$/.test(v)) fail('an octal umask like 0077')
      u.umask = v
    },
  },
  Install: {
    WantedBy: (u, v) => (u.startsAtBoot ||= v.split(/\s+/).includes(BOOT_TARGET)),
  },
}

/** Parses the unit file `name` (its text); throws naming the file and line of what it refuses. */
export function parseUnitFile(name: string, text: string, file = name): UnitSpec {
  const unit: Draft = {
    name,
    after: [],
    before: [],
    wants: [],
    requires: [],
    conditionPathExists: [],
    type: 'simple',
    execStart: [],
    ignoreFailure: false,
    environment: {},
    restart: 'no',
    restartMs: DEFAULT_RESTART_MS,
    remainAfterExit: false,
    startTimeoutMs: 'default',
    stopTimeoutMs: DEFAULT_STOP_TIMEOUT_MS,
    killSignal: 'SIGTERM',
    umask: '0022',
    startsAtBoot: false,
  }
  let section: string | undefined
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    const fail = (why: string): never => {
      throw new Error(`${file}:${i + 1}: ${JSON.stringify(line)}: ${why}`)
    }
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const header = /^\[(\w+)\]$/.exec(line)
    if (header) {
      section = header[1]
      if (!section || !KEYS[section]) return fail(`mini's systemd implements no [${section}] section`)
      continue
    }
    const eq = line.indexOf('=')
    const handler = section && eq > 0 ? KEYS[section]?.[line.slice(0, eq).trim()] : undefined
    if (!handler) return fail(`mini's systemd does not implement this${section ? ` in [${section}]` : ''}`)
    handler(unit, line.slice(eq + 1).trim(), fail)
  }
  const { startTimeoutMs, execStartLine, ...rest } = unit
  if (!execStartLine) throw new Error(`${file}: the unit has no ExecStart=`)
  const command = parseExecStart(execStartLine.value, name, unit.environment, execStartLine.fail)
  rest.execStart = command.argv
  rest.ignoreFailure = command.ignoreFailure
  return {
    ...rest,
    // systemd: oneshot units have no start timeout unless they set one
    startTimeoutMs:
      startTimeoutMs === 'default'
        ? unit.type === 'oneshot'
          ? undefined
          : DEFAULT_START_TIMEOUT_MS
        : startTimeoutMs,
  }
}

function oneOf<T extends string>(allowed: readonly T[], v: string, fail: (why: string) => never): T {
  return (allowed as readonly string[]).includes(v) ? (v as T) : fail(`one of ${allowed.join(', ')}`)
}

function yesNo(v: string, fail: (why: string) => never): boolean {
  if (['yes', 'true', 'on', '1'].includes(v)) return true
  if (['no', 'false', 'off', '0'].includes(v)) return false
  return fail('yes or no')
}

const SPAN_MS: Record<string, number> = {
  ms: 1,
  msec: 1,
  '': 1_000,
  s: 1_000,
  sec: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
}

/** systemd's time span (`2s`, `1min 30s`, `1min30s`, `500ms`, a bare number is seconds); undefined for infinity. */
export function timeSpan(v: string, fail: (why: string) => never): number | undefined {
  if (v === 'infinity') return undefined
  const term = /\s*(\d+(?:\.\d+)?)\s*([a-z]*)/y
  let ms = 0
  while (term.lastIndex < v.length) {
    const m = term.exec(v)
    const unit = m ? SPAN_MS[m[2] ?? ''] : undefined
    if (!m || unit === undefined) return fail('a time span like 2s, 500ms, 1min or infinity')
    ms += Number(m[1]) * unit
  }
  return v.trim() === '' ? fail('a time span like 2s, 500ms, 1min or infinity') : ms
}
