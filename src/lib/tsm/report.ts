/**
 * A confidential VM's evidence through configfs-tsm: one report entry per request, inputs written,
 * generation checked before and after outblob is read, the entry always removed.
 */
import { randomBytes } from 'node:crypto'
import { lstat, mkdir, rm, rmdir } from 'node:fs/promises'
import path from 'node:path'
import { isErrnoException, messageOf } from '../errors/index.js'
import { sleepMs } from '../system/index.js'
import {
  isTsmProvider,
  readAttribute,
  readDecimalAttribute,
  readProviderAttribute,
  TSM_INBLOB_MAX_BYTES,
  TSM_OUTBLOB_MAX_BYTES,
  TSM_PRIVLEVEL_MAX,
  TSM_REPORT_ROOT,
  TsmReportError,
  writeAttribute,
  type TsmProvider,
} from './attributes.js'

export interface TsmReportRequest {
  /** The report directory; default /sys/kernel/config/tsm/report. */
  root?: string
  /** Bound into the report (SEV-SNP REPORT_DATA, TDX REPORTDATA): 1 to 64 bytes, 64 for TDX. */
  inblob: Buffer
  /** When set, any other provider is refused before anything is written. */
  provider?: TsmProvider
  /** SEV-SNP's VMPL; at least the entry's privlevel_floor, at most 3. */
  privlevel?: number
  /** How long to wait for the provider to take the inputs (a kernel needs no wait at all). */
  timeoutMs?: number
}

export interface TsmReport {
  outblob: Buffer
  /** SEV-SNP's certificate table; undefined when the provider has none (TDX) or it is empty. */
  auxblob?: Buffer
  provider: string
  generation: number
}

export const TSM_DEFAULT_TIMEOUT_MS = 10_000
const POLL_FIRST_MS = 1
const POLL_MAX_MS = 50
/** TDX's REPORTDATA is exactly 64 bytes: tdx-guest refuses any other inblob with EINVAL. */
const TDX_INBLOB_BYTES = 64

/** Raised when generation moved in a way our own writes do not explain. */
class GenerationRaceError extends TsmReportError {}

/** One report for `inblob`; a racing writer gets one retry in a fresh entry, then is an error. */
export async function requestTsmReport(req: TsmReportRequest): Promise<TsmReport> {
  checkRequest(req)
  const root = req.root ?? TSM_REPORT_ROOT
  await requireRoot(root)
  try {
    return await requestInFreshEntry(root, req)
  } catch (err) {
    if (!(err instanceof GenerationRaceError)) throw err
    return await requestInFreshEntry(root, req).catch((again: unknown) => {
      if (!(again instanceof GenerationRaceError)) throw again
      throw new TsmReportError(`${again.message}; it happened twice, in two fresh entries`, {
        hint: `another process writes into report entries it did not create under ${root}: find and stop it`,
        cause: err,
      })
    })
  }
}

function checkRequest(req: TsmReportRequest): void {
  const n = req.inblob.length
  if (n === 0 || n > TSM_INBLOB_MAX_BYTES)
    throw new TsmReportError(`inblob is ${n} bytes: configfs-tsm takes 1 to ${TSM_INBLOB_MAX_BYTES}`, {
      hint: 'pass the nonce (or a hash binding nonce and key) as inblob',
    })
  if (req.provider !== undefined && !isTsmProvider(req.provider))
    throw new TsmReportError(`unknown configfs-tsm provider ${JSON.stringify(req.provider)}`, {
      hint: 'use sev_guest or tdx_guest',
    })
  if (req.provider === 'tdx_guest' && n !== TDX_INBLOB_BYTES)
    throw new TsmReportError(`inblob is ${n} bytes: tdx_guest takes exactly ${TDX_INBLOB_BYTES}`, {
      hint: 'pad or hash the report data to 64 bytes',
    })
  const p = req.privlevel
  if (p !== undefined && !(Number.isInteger(p) && p >= 0 && p <= TSM_PRIVLEVEL_MAX))
    throw new TsmReportError(`privlevel ${p} is not an integer from 0 to ${TSM_PRIVLEVEL_MAX}`)
  const t = req.timeoutMs
  if (t !== undefined && !(Number.isFinite(t) && t > 0))
    throw new TsmReportError(`timeoutMs ${t} is not a positive number of milliseconds`)
}

async function requireRoot(root: string): Promise<void> {
  try {
    if ((await lstat(root)).isDirectory()) return
  } catch (err) {
    if (!isErrnoException(err, 'ENOENT'))
      throw new TsmReportError(`looking at ${root} failed`, { cause: err })
    throw new TsmReportError(
      `${root} does not exist: this machine is not a confidential VM, or the kernel lacks configfs-tsm (CONFIG_TSM_REPORTS)`,
      {
        hint: 'run on an SEV-SNP or TDX guest with Linux 6.7 or later, its sev-guest or tdx-guest driver loaded and configfs mounted (mount -t configfs none /sys/kernel/config)',
      },
    )
  }
  throw new TsmReportError(`${root} is not a directory`, { hint: 'pass the configfs-tsm report directory' })
}

async function requestInFreshEntry(root: string, req: TsmReportRequest): Promise<TsmReport> {
  // unique per request, so concurrent requests never share (and race on) one entry
  const entry = path.join(root, `constellation-${process.pid}-${randomBytes(8).toString('hex')}`)
  try {
    await mkdir(entry)
  } catch (err) {
    throw new TsmReportError(`creating report entry ${entry} failed`, {
      hint: isErrnoException(err, 'EACCES')
        ? 'configfs-tsm is writable by root only: run as root'
        : undefined,
      cause: err,
    })
  }
  let report: TsmReport
  try {
    report = await requestInEntry(entry, req)
  } catch (err) {
    await removeEntry(entry).catch((removal: unknown) => {
      throw new TsmReportError(`${messageOf(err)}; removing ${entry} failed too: ${messageOf(removal)}`, {
        hint: `remove it by hand (rmdir ${entry})`,
        cause: err,
      })
    })
    throw err
  }
  await removeEntry(entry).catch((cause: unknown) => {
    throw new TsmReportError(`removing report entry ${entry} failed`, {
      hint: `remove it by hand (rmdir ${entry})`,
      cause,
    })
  })
  return report
}

/**
 * configfs takes an entry's attributes with it on rmdir. A plain directory playing configfs (the
 * stand-in) answers ENOTEMPTY, which configfs never does for a report entry, and its files can go.
 */
async function removeEntry(entry: string): Promise<void> {
  try {
    await rmdir(entry)
  } catch (err) {
    if (!isErrnoException(err, 'ENOTEMPTY')) throw err
    await rm(entry, { recursive: true, force: true, maxRetries: 3 })
  }
}

async function requestInEntry(entry: string, req: TsmReportRequest): Promise<TsmReport> {
  const deadline = Date.now() + (req.timeoutMs ?? TSM_DEFAULT_TIMEOUT_MS)
  const at = (attribute: string) => path.join(entry, attribute)
  const before = await waitForEntry(at('generation'), deadline, req.timeoutMs)
  const provider = await readProviderAttribute(at('provider'))
  if (req.provider !== undefined && provider !== req.provider)
    throw new TsmReportError(`${at('provider')} says ${provider}, this request needs ${req.provider}`, {
      hint: `this node is a ${provider} confidential VM: choose the attestation variant that matches it`,
    })
  let writes = 0
  if (req.privlevel !== undefined) {
    const floor = await readDecimalAttribute(at('privlevel_floor'))
    if (floor !== undefined && req.privlevel < floor)
      throw new TsmReportError(`privlevel ${req.privlevel} is below ${at('privlevel_floor')} (${floor})`, {
        hint: `this guest runs at privilege level ${floor}: request ${floor} or above`,
      })
    await writeAttribute(at('privlevel'), String(req.privlevel))
    writes++
  }
  await writeAttribute(at('inblob'), req.inblob)
  writes++
  const expected = before + writes
  await waitForGeneration(at('generation'), before, expected, deadline)
  const outblob = await readAttribute(at('outblob'), TSM_OUTBLOB_MAX_BYTES)
  if (outblob === undefined || outblob.length === 0)
    throw new TsmReportError(
      `${at('outblob')} is ${outblob ? 'empty' : 'missing'}: ${provider} produced no report`,
      {
        hint: 'see the kernel log (dmesg), or the stand-in host log, for why',
      },
    )
  const auxblob = await readAttribute(at('auxblob'), TSM_OUTBLOB_MAX_BYTES)
  const after = await readGeneration(at('generation'))
  if (after !== expected) throw raced(at('generation'), expected, after, 'while outblob was read')
  return { outblob, ...(auxblob?.length ? { auxblob } : {}), provider, generation: after }
}

async function readGeneration(file: string): Promise<number> {
  const g = await readDecimalAttribute(file)
  if (g === undefined) throw new TsmReportError(`${file} vanished: someone removed the report entry`)
  return g
}

/** The kernel populates an entry within mkdir; a stand-in on a plain filesystem a moment later. */
async function waitForEntry(generation: string, deadline: number, timeoutMs = TSM_DEFAULT_TIMEOUT_MS) {
  for (let delay = POLL_FIRST_MS; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
    const g = await readDecimalAttribute(generation)
    if (g !== undefined) return g
    if (Date.now() >= deadline)
      throw new TsmReportError(`${generation} did not appear within ${timeoutMs} ms of creating the entry`, {
        hint: 'the report directory is not served by configfs-tsm (or its stand-in host is not running)',
      })
    await sleepMs(Math.min(delay, Math.max(deadline - Date.now(), 0)))
  }
}

/** Each write to an input advances generation by one; anything else means another writer. */
async function waitForGeneration(file: string, before: number, expected: number, deadline: number) {
  for (let delay = POLL_FIRST_MS; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
    const g = await readGeneration(file)
    if (g === expected) return
    if (g > expected || g < before) throw raced(file, expected, g, 'after our writes')
    if (Date.now() >= deadline)
      throw new TsmReportError(
        `${file} stayed at ${g}, want ${expected}: the provider did not take the input`,
        {
          hint: 'a kernel advances it at once; a stand-in leaves it alone when it refuses an input (see its log)',
        },
      )
    await sleepMs(Math.min(delay, Math.max(deadline - Date.now(), 0)))
  }
}

function raced(file: string, expected: number, got: number, when: string): GenerationRaceError {
  return new GenerationRaceError(
    `${file} is ${got} ${when}, want ${expected}: another writer changed this entry's inputs`,
  )
}
