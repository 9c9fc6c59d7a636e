/**
 * The TCG PC Client crypto-agile event log (securityfs `binary_bios_measurements`): one SHA-1-format
 * TCG_PCR_EVENT carrying the "Spec ID Event03" header (which digests every later event carries and
 * their sizes), then TCG_PCR_EVENT2 entries with one digest per bank. Parsing only: no trust.
 */
import { TPM_ALG } from '../../tpm/index.js'

/** Bounds: a document is at most 1 MiB, and real firmware logs hold a few hundred events. */
export const MAX_EVENT_LOG_BYTES = 1 << 20
export const MAX_EVENTS = 10_000
/** Large enough for a dbx update in an EV_EFI_VARIABLE_DRIVER_CONFIG event. */
export const MAX_EVENT_DATA_BYTES = 256 * 1024
const MAX_ALGORITHMS = 8
const MAX_DIGEST_BYTES = 64
const PCR_LIMIT = 24

export const EV_NO_ACTION = 0x3
const SPEC_ID_SIGNATURE = Buffer.from('Spec ID Event03\0', 'latin1')
const SHA1_DIGEST_BYTES = 20

export interface LogEvent {
  /** Position in the log; the header event is 0. */
  index: number
  /** Byte offset of the event in the log. */
  offset: number
  pcr: number
  type: number
  /** TPM_ALG → digest. */
  digests: Map<number, Buffer>
  data: Buffer
}

export interface EventLog {
  /** TPM_ALG → digest size, from the Spec ID header. */
  algorithms: Map<number, number>
  /** Every event after the header, in log order. */
  events: LogEvent[]
}

export class EventLogParseError extends Error {
  constructor(
    message: string,
    readonly offset: number,
    readonly eventIndex: number,
  ) {
    super(`event log: event ${eventIndex} at byte ${offset}: ${message}`)
    this.name = 'EventLogParseError'
  }
}

/** Reads little-endian fields; every read names the event it belongs to when it runs out of bytes. */
class Reader {
  pos = 0
  constructor(
    private readonly buf: Buffer,
    public eventIndex = 0,
    public eventOffset = 0,
  ) {}
  get left(): number {
    return this.buf.length - this.pos
  }
  fail(msg: string): never {
    throw new EventLogParseError(msg, this.eventOffset, this.eventIndex)
  }
  private need(n: number, what: string): void {
    if (n > this.left) this.fail(`${what}: needs ${n} bytes, only ${this.left} left`)
  }
  u8(what: string): number {
    this.need(1, what)
    return this.buf.readUInt8(this.pos++)
  }
  u16(what: string): number {
    this.need(2, what)
    const v = this.buf.readUInt16LE(this.pos)
    this.pos += 2
    return v
  }
  u32(what: string): number {
    this.need(4, what)
    const v = this.buf.readUInt32LE(this.pos)
    this.pos += 4
    return v
  }
  bytes(n: number, what: string): Buffer {
    this.need(n, what)
    const v = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return v
  }
}

export function parseEventLog(raw: Buffer): EventLog {
  if (raw.length > MAX_EVENT_LOG_BYTES)
    throw new EventLogParseError(`log is ${raw.length} bytes, more than ${MAX_EVENT_LOG_BYTES}`, 0, 0)
  const r = new Reader(raw)
  const algorithms = readSpecIdHeader(r)
  const events: LogEvent[] = []
  while (r.left > 0) {
    const index = events.length + 1
    if (index > MAX_EVENTS) {
      r.eventIndex = index
      r.eventOffset = r.pos
      r.fail(`more than ${MAX_EVENTS} events`)
    }
    events.push(readEvent2(r, index, algorithms))
  }
  return { algorithms, events }
}

function readPcrIndex(r: Reader): number {
  const pcr = r.u32('PCR index')
  if (pcr >= PCR_LIMIT) r.fail(`PCR index ${pcr} is not 0-23`)
  return pcr
}

function readEventData(r: Reader): Buffer {
  const size = r.u32('event size')
  if (size > MAX_EVENT_DATA_BYTES) r.fail(`event size ${size} is more than ${MAX_EVENT_DATA_BYTES} bytes`)
  return r.bytes(size, 'event data')
}

/** The first event, in the SHA-1 format: EV_NO_ACTION on PCR 0 whose data is the Spec ID header. */
function readSpecIdHeader(r: Reader): Map<number, number> {
  const pcr = readPcrIndex(r)
  const type = r.u32('event type')
  r.bytes(SHA1_DIGEST_BYTES, 'SHA-1 digest')
  const data = readEventData(r)
  if (pcr !== 0 || type !== EV_NO_ACTION)
    r.fail(
      `the first event must be EV_NO_ACTION on PCR 0 (the Spec ID header), found type 0x${type.toString(16)} on PCR ${pcr}`,
    )
  const h = new Reader(data, 0, 0)
  if (!h.bytes(16, 'Spec ID signature').equals(SPEC_ID_SIGNATURE))
    r.fail(
      'not a crypto-agile log: the header is not "Spec ID Event03" (a SHA-1-only log cannot be replayed)',
    )
  h.u32('platform class')
  h.bytes(4, 'spec version and uintn size')
  const count = h.u32('number of algorithms')
  if (count === 0 || count > MAX_ALGORITHMS)
    r.fail(`Spec ID header lists ${count} algorithms, want 1-${MAX_ALGORITHMS}`)
  const algorithms = new Map<number, number>()
  for (let i = 0; i < count; i++) {
    const alg = h.u16('algorithm ID')
    const size = h.u16('digest size')
    if (size === 0 || size > MAX_DIGEST_BYTES)
      r.fail(`Spec ID header: algorithm 0x${alg.toString(16)} has digest size ${size}`)
    const known = KNOWN_SIZES.get(alg)
    if (known !== undefined && known !== size)
      r.fail(`Spec ID header: algorithm 0x${alg.toString(16)} has digest size ${size}, not ${known}`)
    if (algorithms.has(alg)) r.fail(`Spec ID header lists algorithm 0x${alg.toString(16)} twice`)
    algorithms.set(alg, size)
  }
  h.bytes(h.u8('vendor info size'), 'vendor info')
  return algorithms
}

const KNOWN_SIZES = new Map<number, number>([
  [TPM_ALG.SHA1, 20],
  [TPM_ALG.SHA256, 32],
  [TPM_ALG.SHA384, 48],
])

function readEvent2(r: Reader, index: number, algorithms: Map<number, number>): LogEvent {
  r.eventIndex = index
  r.eventOffset = r.pos
  const offset = r.pos
  const pcr = readPcrIndex(r)
  const type = r.u32('event type')
  const count = r.u32('digest count')
  // every event carries a digest for each bank the header announces, even EV_NO_ACTION (zeros)
  if (count !== algorithms.size)
    r.fail(`${count} digests, but the header lists ${algorithms.size} algorithms`)
  const digests = new Map<number, Buffer>()
  for (let i = 0; i < count; i++) {
    const alg = r.u16('digest algorithm')
    const size = algorithms.get(alg)
    if (size === undefined) r.fail(`digest algorithm 0x${alg.toString(16)} is not in the Spec ID header`)
    if (digests.has(alg)) r.fail(`digest algorithm 0x${alg.toString(16)} appears twice`)
    digests.set(alg, Buffer.from(r.bytes(size, `digest 0x${alg.toString(16)}`)))
  }
  const data = Buffer.from(readEventData(r))
  return { index, offset, pcr, type, digests, data }
}
