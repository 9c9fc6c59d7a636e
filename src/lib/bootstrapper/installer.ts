/** Installs Kubernetes components on the node: download (http(s) or data:), sha256 check, copy or extract under the root. */
import { createHash } from 'node:crypto'
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../system/index.js'
import { retry, sleepMs } from '../system/index.js'
import type { HttpGet, HttpResponse } from './http-get.js'
import { extractTarGz } from './tar-extract.js'

export interface Component {
  url: string
  hash: string
  installPath: string
  extract: boolean
}

/** HTTP statuses worth another try (Constellation's installer retries exactly these). */
export const TRANSIENT_HTTP_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504])
export const INSTALLED_FILE_MODE = 0o544

export interface InstallerDeps {
  root: string
  /** httpGet (./http-get.ts) in production. */
  get: HttpGet
  log: Logger
  /** Download attempts per component (including the first). */
  attempts?: number
  initialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  signal?: AbortSignal
}

class TransientDownloadError extends Error {}

export async function installComponents(
  components: readonly Component[],
  deps: InstallerDeps,
): Promise<void> {
  for (const [i, component] of components.entries()) {
    await installComponent(component, deps).catch((cause: unknown) => {
      throw new Error(
        `installing component ${i} (${describeUrl(component.url)} → ${component.installPath})`,
        { cause },
      )
    })
  }
}

async function installComponent(component: Component, deps: InstallerDeps): Promise<void> {
  const target = installTarget(deps.root, component.installPath)
  const data = await download(component.url, deps)
  verifyHash(data, component.hash)
  if (component.extract) {
    await extractTarGz(data, target)
  } else {
    await mkdir(path.dirname(target), { recursive: true })
    await writeFile(target, data, { mode: INSTALLED_FILE_MODE })
    await chmod(target, INSTALLED_FILE_MODE)
  }
  deps.log.info('Installed component', {
    url: describeUrl(component.url),
    installPath: component.installPath,
  })
}

/** The install path is a node path: absolute, and it stays under the root after resolution. */
export function installTarget(root: string, installPath: string): string {
  if (!path.isAbsolute(installPath))
    throw new Error(`install path ${JSON.stringify(installPath)} is not absolute`)
  const resolvedRoot = path.resolve(root)
  const target = path.resolve(resolvedRoot, '.' + path.posix.normalize(installPath))
  if (target !== resolvedRoot && !target.startsWith(resolvedRoot + path.sep))
    throw new Error(`install path ${JSON.stringify(installPath)} leaves the node root`)
  if (installPath.split('/').includes('..'))
    throw new Error(`install path ${JSON.stringify(installPath)} contains ".."`)
  return target
}

function verifyHash(data: Buffer, want: string): void {
  if (want === '') return
  const m = /^sha256:([0-9a-f]{64})$/i.exec(want)
  if (!m) throw new Error(`hash ${JSON.stringify(want)} is not sha256:<64 hex digits>`)
  const got = createHash('sha256').update(data).digest('hex')
  if (got !== m[1]?.toLowerCase()) throw new Error(`sha256 mismatch: got ${got}, want ${m[1]}`)
}

async function download(url: string, deps: InstallerDeps): Promise<Buffer> {
  if (url.startsWith('data:')) return decodeDataUrl(url)
  if (!/^https?:\/\//.test(url))
    throw new Error(`unsupported URL scheme in ${describeUrl(url)} (want http, https or data)`)
  return retry(
    async () => {
      let res: HttpResponse
      try {
        res = await deps.get(url, deps.signal)
      } catch (cause) {
        throw new TransientDownloadError(`fetching ${url}`, { cause })
      }
      if (TRANSIENT_HTTP_STATUSES.has(res.status))
        throw new TransientDownloadError(`GET ${url}: HTTP ${res.status}`)
      if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}`)
      return res.body
    },
    {
      attempts: deps.attempts ?? 10,
      initialDelayMs: deps.initialDelayMs ?? 100,
      maxDelayMs: 5_000,
      retryable: (err) => err instanceof TransientDownloadError,
      signal: deps.signal,
      sleep: deps.sleep ?? sleepMs,
      onRetry: (err, attempt, delayMs) =>
        deps.log.warn('Download failed, retrying', {
          url,
          attempt,
          delayMs,
          error: err instanceof Error ? err.message : String(err),
        }),
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
