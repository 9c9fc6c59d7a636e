/** The attribute files of a configfs-tsm report entry (Linux Documentation/ABI/testing/configfs-tsm-report). */
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import { CliError, isErrnoException } from '../errors/index.js'

export const TSM_REPORT_ROOT = '/sys/kernel/config/tsm/report'
/** The kernel's TSM_INBLOB_MAX: a longer write to inblob fails (EFBIG). */
export const TSM_INBLOB_MAX_BYTES = 64
/** The kernel's TSM_OUTBLOB_MAX, which bounds auxblob as well. */
export const TSM_OUTBLOB_MAX_BYTES = 32 * 1024
/** The kernel's TSM_PRIVLEVEL_MAX. */
export const TSM_PRIVLEVEL_MAX = 3
/** A decimal attribute (generation, privlevel_floor, provider) is a short line. */
const SMALL_ATTRIBUTE_MAX_BYTES = 64

/** The providers this client knows: the sev-guest and tdx-guest drivers. */
export const TSM_PROVIDERS = ['sev_guest', 'tdx_guest'] as const
export type TsmProvider = (typeof TSM_PROVIDERS)[number]
export const isTsmProvider = (v: unknown): v is TsmProvider =>
  typeof v === 'string' && (TSM_PROVIDERS as readonly string[]).includes(v)

/** Something configfs-tsm did or said that stops this request; names the path. */
export class TsmReportError extends CliError {
  constructor(message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, opts)
    this.name = 'TsmReportError'
  }
}

/**
 * The bytes of an attribute file, at most maxBytes (more is refused, not truncated), or undefined
 * when the file does not exist. A configfs file reports no size, so the bound is checked while reading.
 */
export async function readAttribute(file: string, maxBytes: number): Promise<Buffer | undefined> {
  let handle
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) return undefined
    throw readFailed(file, err)
  }
  try {
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const chunk = Buffer.alloc(Math.min(maxBytes + 1 - total, 64 * 1024))
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null)
      if (bytesRead === 0) return Buffer.concat(chunks, total)
      total += bytesRead
      if (total > maxBytes)
        throw new TsmReportError(`${file} holds more than ${maxBytes} bytes`, {
          hint: 'configfs-tsm never returns that much: check that this is the kernel interface, not another file',
        })
      chunks.push(chunk.subarray(0, bytesRead))
    }
  } catch (err) {
    if (err instanceof TsmReportError) throw err
    throw readFailed(file, err)
  } finally {
    await handle.close()
  }
}

function readFailed(file: string, cause: unknown): TsmReportError {
  const code = isErrnoException(cause) ? ` (${cause.code})` : ''
  return new TsmReportError(`reading ${file} failed${code}`, {
    hint: 'the TSM provider (sev-guest or tdx-guest driver) refused the request: see the kernel log (dmesg)',
    cause,
  })
}

/** A decimal attribute such as generation or privlevel_floor ("%u\n" in the kernel). */
export async function readDecimalAttribute(file: string): Promise<number | undefined> {
  const data = await readAttribute(file, SMALL_ATTRIBUTE_MAX_BYTES)
  if (data === undefined) return undefined
  const text = data.toString('latin1')
  if (!/^\d{1,15}\n?$/.test(text))
    throw new TsmReportError(`${file} holds ${JSON.stringify(text)}, not a decimal number`, {
      hint: 'check that this is the kernel interface, not another file',
    })
  return Number(text.trim())
}

/** provider: the name of the driver that produces outblob, e.g. sev_guest. */
export async function readProviderAttribute(file: string): Promise<string> {
  const data = await readAttribute(file, SMALL_ATTRIBUTE_MAX_BYTES)
  if (data === undefined) throw new TsmReportError(`${file} does not exist`)
  return data.toString('utf8').trim()
}

/** One write(2) to an attribute; the kernel takes the input when the file is closed. */
export async function writeAttribute(file: string, data: Buffer | string): Promise<void> {
  let handle
  try {
    // O_TRUNC matters only on a plain file (the stand-in); configfs ignores it
    handle = await open(file, constants.O_WRONLY | constants.O_TRUNC)
  } catch (err) {
    throw writeFailed(file, err)
  }
  try {
    await handle.write(typeof data === 'string' ? Buffer.from(data) : data)
  } catch (err) {
    throw writeFailed(file, err)
  } finally {
    await handle.close()
  }
}

function writeFailed(file: string, cause: unknown): TsmReportError {
  const code = isErrnoException(cause) ? ` (${cause.code})` : ''
  return new TsmReportError(`writing ${file} failed${code}`, {
    hint: isErrnoException(cause, 'EACCES')
      ? 'configfs-tsm is writable by root only: run as root'
      : 'the kernel refused the input: see the kernel log (dmesg)',
    cause,
  })
}
