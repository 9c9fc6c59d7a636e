/**
 * Installs Kubernetes components in two steps, so that only the cheap one follows the node lock.
 * stageComponents (before the lock): check every component, download it (http, https or data:),
 * verify its sha256 and unpack it into a staging directory. install (after the lock): copy into place.
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { messageOf } from '../../errors/index.js'
import type { Logger } from '../../system/index.js'
import { copyFileAtomic, forEachBounded, retry, sleepMs } from '../../system/index.js'
import {
  DEFAULT_DOWNLOAD_LIMITS,
  DownloadTooLargeError,
  type DownloadLimits,
  type HttpGet,
  type HttpResponse,
} from '../../system/index.js'
import { extractTarGz, MAX_EXTRACTED_BYTES } from './tar-extract.js'

export interface Component {
  url: string
  hash: string
  installPath: string
  extract: boolean
}

/** HTTP statuses worth another try (Constellation's installer retries exactly these). */
export const TRANSIENT_HTTP_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504])
export const INSTALLED_FILE_MODE = 0o544
/** Components staged at once. */
export const STAGING_CONCURRENCY = 4
const SHA256_HASH = /^sha256:([0-9a-f]{64})$/i

export interface InstallerDeps {
  root: string
  /** Where components wait between download and install; removed afterwards. */
  stagingDir: string
  /** httpGet (system/http-get.ts) in production. */
  get: HttpGet
  log: Logger
  /** Download attempts per component (including the first). */
  attempts?: number
  initialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  /** Aborts downloads in flight (the daemon is stopping). */
  signal?: AbortSignal
  limits?: Partial<DownloadLimits>
  /** File bytes one archive may unpack to. */
  maxExtractedBytes?: number
}

export interface StagedComponents {
  /**
   * Copies every component (or those `select` picks) into place under the root; each one once
   * (an upgrade installs the kubelet apart, after kubeadm's step).
   */
  install(select?: (component: Component) => boolean): Promise<void>
  /** Removes the staging directory; safe to call more than once. */
  discard(): Promise<void>
}

class TransientDownloadError extends Error {}

/** Refuses what the node must never install: a component without a sha256, an install path with `..` or outside the root. */
export function checkComponents(components: readonly Component[], root: string): void {
  for (const [i, c] of components.entries()) {
    const where = `component ${i} (${describeUrl(c.url)})`
    if (!SHA256_HASH.test(c.hash))
      throw new Error(
        `${where}: hash ${JSON.stringify(c.hash)} is not sha256:<64 hex digits>; every component needs one`,
      )
    try {
      installTarget(root, c.installPath)
    } catch (cause) {
      throw new Error(`${where}: ${messageOf(cause)}`, { cause })
    }
  }
}

/** Checks, downloads, verifies and unpacks every component; changes nothing outside the staging directory. */
export async function stageComponents(
  components: readonly Component[],
  deps: InstallerDeps,
): Promise<StagedComponents> {
  checkComponents(components, deps.root)
  await mkdir(deps.stagingDir, { recursive: true, mode: 0o700 })
  const dir = await mkdtemp(path.join(deps.stagingDir, 'init-'))
  const discard = () => rm(dir, { recursive: true, force: true })
  try {
    // Downloads run side by side (a node's five components from a mirror: each connection's own
    // slow start and round trips, and one's hashing beside another's download); the first failure
    // ends the others' and is the error.
    const staged: Staged[] = []
    const failed = new AbortController()
    const signal = deps.signal ? AbortSignal.any([deps.signal, failed.signal]) : failed.signal
    await forEachBounded([...components.entries()], STAGING_CONCURRENCY, async ([i, component]) => {
      const done = await stageComponent(i, component, dir, { ...deps, signal }).catch((cause: unknown) => {
        // a download that failure ended is not the error: the failure is
        if (failed.signal.aborted) return undefined
        failed.abort()
        throw new Error(`component ${i} (${describeUrl(component.url)} → ${component.installPath})`, {
          cause,
        })
      })
      if (done) staged[i] = done
    })
    const pending = new Set(staged)
    const install = async (select: (c: Component) => boolean = () => true) => {
      const now = staged.filter((s) => pending.has(s) && select(s.component))
      await installStaged(now, deps.log)
      for (const s of now) pending.delete(s)
    }
    return { install, discard }
  } catch (err) {
    await discard()
    throw err
  }
}

interface Staged {
  component: Component
  target: string
  /** The verified file, or the unpacked tree of an archive. */
  source: string
}

async function stageComponent(i: number, component: Component, dir: string, deps: InstallerDeps) {
  const target = installTarget(deps.root, component.installPath)
  const file = path.join(dir, `${i}.download`)
  await download(component.url, file, deps)
  await verifyHash(file, component.hash)
  if (!component.extract) return { component, target, source: file }
  const tree = path.join(dir, `${i}.tree`)
  await extractTarGz(file, tree, { maxBytes: deps.maxExtractedBytes ?? MAX_EXTRACTED_BYTES })
  await rm(file)
  return { component, target, source: tree }
}

async function installStaged(staged: readonly Staged[], log: Logger): Promise<void> {
  for (const { component, target, source } of staged) {
    if (component.extract) {
      // merges into what is there, like extracting in place; links are copied as links (cp
      // unlinks a file or link in the way, and refuses a link where a directory goes)
      await cp(source, target, { recursive: true, force: true, verbatimSymlinks: true })
    } else {
      // replaces what is at the target (a running binary, a planted link), never writes through it
      await copyFileAtomic(source, target, INSTALLED_FILE_MODE)
    }
    log.info('Installed component', { url: describeUrl(component.url), installPath: component.installPath })
  }
}

/** The install path is a node path: absolute, and it stays under the root after resolution. */
export function installTarget(root: string, installPath: string): string {
  if (!path.isAbsolute(installPath))
    throw new Error(`install path ${JSON.stringify(installPath)} is not absolute`)
  if (installPath.split('/').includes('..'))
    throw new Error(`install path ${JSON.stringify(installPath)} contains ".."`)
  const resolvedRoot = path.resolve(root)
  const target = path.resolve(resolvedRoot, '.' + path.posix.normalize(installPath))
  // a real node's root is "/", which already ends in the separator ("//" would refuse everything)
  const under = resolvedRoot.endsWith(path.sep) ? resolvedRoot : resolvedRoot + path.sep
  if (target === resolvedRoot || !target.startsWith(under))
    throw new Error(`install path ${JSON.stringify(installPath)} is the node root or leaves it`)
  return target
}

async function verifyHash(file: string, want: string): Promise<void> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer)
  const got = hash.digest('hex')
  const wanted = SHA256_HASH.exec(want)?.[1]?.toLowerCase()
  if (got !== wanted) throw new Error(`sha256 mismatch: got ${got}, want ${wanted ?? want}`)
}

async function download(url: string, file: string, deps: InstallerDeps): Promise<void> {
  const limits = { ...DEFAULT_DOWNLOAD_LIMITS, ...deps.limits }
  if (url.startsWith('data:')) {
    const data = decodeDataUrl(url)
    if (data.length > limits.maxBytes)
      throw new Error(`data: URL holds ${data.length} bytes, over the limit of ${limits.maxBytes}`)
    return writeFile(file, data, { flag: 'wx', mode: 0o600 })
  }
  if (!/^https?:\/\//.test(url))
    throw new Error(`unsupported URL scheme in ${describeUrl(url)} (want http, https or data)`)
  await retry(
    async () => {
      await rm(file, { force: true })
      let res: HttpResponse
      try {
        res = await deps.get(url, file, { signal: deps.signal, limits })
      } catch (cause) {
        if (deps.signal?.aborted || cause instanceof DownloadTooLargeError) throw cause
        throw new TransientDownloadError(messageOf(cause), { cause })
      }
      if (TRANSIENT_HTTP_STATUSES.has(res.status))
        throw new TransientDownloadError(`GET ${url}: HTTP ${res.status}`)
      if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}`)
    },
    {
      attempts: deps.attempts ?? 10,
      initialDelayMs: deps.initialDelayMs ?? 100,
      maxDelayMs: 5_000,
      retryable: (err) => err instanceof TransientDownloadError,
      signal: deps.signal,
      sleep: deps.sleep ?? sleepMs,
      onRetry: (err, attempt, delayMs) =>
        deps.log.warn('Download failed, retrying', { url, attempt, delayMs, error: messageOf(err) }),
    },
  )
}

export function decodeDataUrl(url: string): Buffer {
  const comma = url.indexOf(',')
  if (comma < 0) throw new Error('data: URL has no comma')
  const meta = url.slice('data:'.length, comma)
  const payload = url.slice(comma + 1)
  return meta.split(';').includes('base64')
    ? Buffer.from(payload, 'base64')
    : Buffer.from(decodeURIComponent(payload), 'utf8')
}

/** data: URLs can be long; logs and errors show only their media type. */
function describeUrl(url: string): string {
  return url.startsWith('data:') ? url.slice(0, Math.min(url.indexOf(',') + 1 || 40, 60)) + '…' : url
}
