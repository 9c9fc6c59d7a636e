/**
 * Fetching signed reference measurements: the file and its detached signature, each download
 * bounded in size and time (http, https, or file:// for air gaps), verified against a public key
 * the caller pins (never one from the server), then parsed and narrowed to the workspace's variant.
 */
import type { KeyObject } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { messageOf, UsageError } from '../errors/index.js'
import { DownloadTooLargeError, readRegularFile, type DownloadLimits, type HttpGet } from '../system/index.js'
import { entryForVariant, parseMeasurementsDocument, type MeasurementsEntry } from './document.js'
import { MeasurementsRefusedError } from './refusal.js'
import { verifyBlob } from './signature.js'

/** A measurements file is a few kB; a signature under 100 bytes. Minutes would be a stuck server. */
export const MEASUREMENTS_DOWNLOAD_LIMITS: DownloadLimits = {
  maxBytes: 1024 * 1024,
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 20_000,
  totalTimeoutMs: 60_000,
}
export const SIGNATURE_MAX_BYTES = 4096

export interface FetchMeasurementsOptions {
  measurementsUrl: string
  signatureUrl: string
  publicKey: KeyObject
  /** The workspace's attestation variant; the document must name it. */
  variant: string
  limits?: Partial<DownloadLimits>
}

export interface FetchedMeasurements {
  image: string
  entry: MeasurementsEntry
  /** The bytes that were verified, for the report's digest. */
  bytes: Buffer
}

/** The URL as given, or the usage error that says which flag is wrong. */
export function parseFetchUrl(value: string, flag: string): URL {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new UsageError(
      `${flag} ${JSON.stringify(value)} is not a URL`,
      'give http://, https:// or file:// URLs',
    )
  }
  if (!['http:', 'https:', 'file:'].includes(url.protocol))
    throw new UsageError(
      `${flag} ${value}: ${url.protocol} is not supported`,
      'give http://, https:// or file:// URLs',
    )
  return url
}

export async function fetchSignedMeasurements(
  opts: FetchMeasurementsOptions,
  get: HttpGet,
): Promise<FetchedMeasurements> {
  const limits = { ...MEASUREMENTS_DOWNLOAD_LIMITS, ...opts.limits }
  const bytes = await download(opts.measurementsUrl, 'the measurements', limits, get)
  const signature = await download(
    opts.signatureUrl,
    'the signature',
    { ...limits, maxBytes: SIGNATURE_MAX_BYTES },
    get,
  )
  // Nothing of the file is read before its signature holds: a forged one cannot steer the parser.
  verifyBlob(bytes, signature, opts.publicKey, opts.measurementsUrl)
  const doc = parseMeasurementsDocument(bytes, opts.measurementsUrl)
  return { image: doc.image, entry: entryForVariant(doc, opts.variant, opts.measurementsUrl), bytes }
}

async function download(url: string, what: string, limits: DownloadLimits, get: HttpGet): Promise<Buffer> {
  const parsed = new URL(url)
  if (parsed.protocol === 'file:') return readLocal(fileURLToPath(parsed), what, limits.maxBytes)
  const dir = await mkdtemp(path.join(tmpdir(), 'constell-measurements-'))
  try {
    const file = path.join(dir, 'body')
    const res = await get(url, file, { limits }).catch((err: unknown) => {
      throw downloadFailure(url, what, err, limits)
    })
    if (res.status !== 200)
      throw new MeasurementsRefusedError(
        'download',
        `fetching ${what}: GET ${url} answered HTTP ${res.status}`,
        'check the URL; nothing was written',
      )
    return await readFile(file)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function downloadFailure(url: string, what: string, err: unknown, limits: DownloadLimits): Error {
  const message = messageOf(err)
  const cause: NodeJS.ErrnoException | undefined =
    err instanceof Error && err.cause instanceof Error ? err.cause : undefined
  const code = cause?.code
  const reason =
    err instanceof DownloadTooLargeError
      ? 'too-large'
      : /not finished within|no data from the server|no connection within/.test(message)
        ? 'timeout'
        : code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH'
          ? 'unreachable'
          : 'download'
  const hint =
    reason === 'too-large'
      ? `a measurements file is a few kB; the limit is ${limits.maxBytes} bytes, so this is not one`
      : 'check the URL and the network; nothing was written'
  return new MeasurementsRefusedError(reason, `fetching ${what}: ${message}`, hint, err)
}

async function readLocal(file: string, what: string, maxBytes: number): Promise<Buffer> {
  try {
    return await readRegularFile(file, { maxBytes, what })
  } catch (err) {
    const reason = /is too large/.test(messageOf(err)) ? 'too-large' : 'download'
    throw new MeasurementsRefusedError(
      reason,
      `reading ${what}: ${messageOf(err)}`,
      'nothing was written',
      err,
    )
  }
}
