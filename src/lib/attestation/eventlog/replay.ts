/**
 * Replays an event log against quoted PCR values. The log constrains exactly the PCRs it has
 * extending events for, as go-tpm-tools and Constellation replay: firmware measures the boot (PCRs
 * 0–9 and so on) but not what the running system extends later (PCR 15, the node lock), so a PCR
 * without events is left to the measurements. Every PCR with events must replay to its quoted value.
 */
import { createHash } from 'node:crypto'
import { TPM_ALG } from '../../tpm/index.js'
import { AttestationError } from '../errors.js'
import { describeEvent, eventTypeName } from './describe.js'
import { EV_NO_ACTION, EventLogParseError, parseEventLog, type LogEvent } from './parse.js'

const BANKS = new Map<number, { name: string; hash: string; size: number }>([
  [TPM_ALG.SHA1, { name: 'SHA-1', hash: 'sha1', size: 20 }],
  [TPM_ALG.SHA256, { name: 'SHA-256', hash: 'sha256', size: 32 }],
  [TPM_ALG.SHA384, { name: 'SHA-384', hash: 'sha384', size: 48 }],
])

/** One event as verify shows it. */
export interface ReplayedEvent {
  index: number
  pcr: number
  type: string
  /** Hex digest in the replayed bank. */
  digest: string
  description: string
}

export interface EventLogReplay {
  /** The bank replayed ('SHA-256'). */
  bank: string
  /** PCRs the log has extending events for; each replayed to its quoted value. */
  pcrs: number[]
  events: ReplayedEvent[]
}

/**
 * Parses `raw` and replays the `hashAlg` bank; refuses a malformed log, a log without that bank, or
 * a PCR whose replay differs from `quoted`, naming the PCR and both values.
 */
export function replayEventLog(
  raw: Buffer,
  hashAlg: number,
  quoted: ReadonlyMap<number, Buffer>,
): EventLogReplay {
  const bank = BANKS.get(hashAlg)
  if (!bank) throw new AttestationError(`event log: cannot replay PCR bank 0x${hashAlg.toString(16)}`)
  let events: LogEvent[]
  try {
    const log = parseEventLog(raw)
    if (!log.algorithms.has(hashAlg))
      throw new AttestationError(`event log carries no ${bank.name} digests, the bank the quote covers`)
    events = log.events
  } catch (err: unknown) {
    if (err instanceof EventLogParseError)
      throw new AttestationError(`malformed ${err.message}`, { cause: err })
    throw err
  }
  const replayed = replay(events, hashAlg, bank)
  for (const [pcr, value] of [...replayed].sort(([a], [b]) => a - b)) {
    const want = quoted.get(pcr)
    if (want === undefined)
      throw new AttestationError(`event log has events for PCR ${pcr}, which the quote does not cover`)
    if (!want.equals(value))
      throw new AttestationError(
        `event log does not reproduce the quoted PCR ${pcr}: replayed ${value.toString('hex')}, quoted ${want.toString('hex')}`,
      )
  }
  return {
    bank: bank.name,
    pcrs: [...replayed.keys()].sort((a, b) => a - b),
    events: events.map((e) => ({
      index: e.index,
      pcr: e.pcr,
      type: eventTypeName(e.type),
      digest: (e.digests.get(hashAlg) ?? Buffer.alloc(0)).toString('hex'),
      description: describeEvent(e.type, e.data),
    })),
  }
}

const STARTUP_LOCALITY = Buffer.from('StartupLocality\0', 'latin1')

function replay(
  events: readonly LogEvent[],
  hashAlg: number,
  bank: { hash: string; size: number },
): Map<number, Buffer> {
  const pcrs = new Map<number, Buffer>()
  let locality = 0
  for (const e of events) {
    if (e.type === EV_NO_ACTION) {
      // the one EV_NO_ACTION that changes a value: PCR 0 starts at the locality the CRTM ran in
      if (e.pcr === 0 && e.data.length === 17 && e.data.subarray(0, 16).equals(STARTUP_LOCALITY))
        locality = e.data[16] ?? 0
      continue
    }
    const digest = e.digests.get(hashAlg)
    if (!digest)
      throw new AttestationError(
        `malformed event log: event ${e.index} at byte ${e.offset} has no digest for the quoted bank`,
      )
    const initial = Buffer.alloc(bank.size)
    if (e.pcr === 0) initial[bank.size - 1] = locality
    const before = pcrs.get(e.pcr) ?? initial
    pcrs.set(e.pcr, createHash(bank.hash).update(before).update(digest).digest())
  }
  return pcrs
}
