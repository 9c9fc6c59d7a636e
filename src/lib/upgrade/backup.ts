/**
 * Pre-upgrade backups, laid out like Constellation's (`constellation-upgrade/<id>/`):
 *   backups/crds/<crd>.yaml
 *   backups/<group>/<version>/<namespace>/<Kind>/<name>.yaml   (no namespace level when cluster-scoped)
 *   helm-charts/<release>/overrides.yaml   values this upgrade applies (also the file handed to helm)
 *   helm-charts/<release>/rendered.yaml    the target chart rendered with those values, CRDs included
 *   helm-charts/<release>/installed-values.yaml, installed-manifest.yaml   what runs now (if installed)
 * Every file is created exclusively and 0600 (values may hold secrets); the folder is 0700.
 */
import { randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { stringifyYaml } from '../yaml/index.js'
import type { Helm } from '../helm/index.js'
import { forEachBounded, writeNewSecretFilesSync, writeSecretFile } from '../system/index.js'
import type { ClusterReader } from './kube-reader.js'
import type { PlannedRelease } from './plan.js'

export const BACKUP_PAGE_SIZE = 500
/**
 * Resources (a CRD's served version) listed at once. Pages of one resource follow each other
 * (each continue token comes with the page before), so this, and reading one page ahead, is
 * where the backup overlaps the API server's work with its own; it also bounds what is held in
 * memory: at most two pages per listing.
 */
const LIST_CONCURRENCY = 4

export interface ClusterBackupSummary {
  crds: number
  customResources: number
}

/** `upgrade-<YYYYMMDDhhmmss>-<8 hex>` in UTC, as Constellation names its upgrade folders. */
export function newUpgradeId(now: Date, random: () => string = randomUUID): string {
  const stamp = now.toISOString().replace(/[-:T]/g, '').slice(0, 14)
  return `upgrade-${stamp}-${random().replace(/-/g, '').slice(0, 8)}`
}

/** Creates the upgrade folder; it must not exist yet (nothing of an earlier upgrade is touched). */
export async function createUpgradeFolder(upgradeRoot: string, id: string): Promise<string> {
  await mkdir(upgradeRoot, { recursive: true, mode: 0o700 })
  const dir = path.join(upgradeRoot, id)
  await mkdir(dir, { mode: 0o700 })
  return dir
}

interface CrdVersion {
  name: string
  served?: boolean
}
interface Crd {
  metadata: { name: string }
  spec: { group: string; names: { plural: string; kind: string }; versions: CrdVersion[] }
}

/** Backs up every CRD and every object of every served version of each, page by page. */
export async function backupCustomResources(
  reader: ClusterReader,
  dir: string,
  pageSize = BACKUP_PAGE_SIZE,
): Promise<ClusterBackupSummary> {
  const writer = new BackupWriter(path.join(dir, 'backups'))
  const crds: Crd[] = []
  const crdList = listPages(reader, 'apiextensions.k8s.io', 'v1', 'customresourcedefinitions', pageSize)
  for await (const page of crdList) {
    const files = page.map((item) => {
      const crd = asCrd(item)
      crds.push(crd)
      const doc = {
        ...(item as object),
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
      }
      return { segments: ['crds'], file: `${crd.metadata.name}.yaml`, doc }
    })
    await writer.write(files)
  }
  const resources = crds.flatMap((crd) =>
    crd.spec.versions.filter((v) => v.served !== false).map((v) => ({ ...crd.spec, version: v.name })),
  )
  let customResources = 0
  await forEachBounded(resources, LIST_CONCURRENCY, async ({ group, version, names }, failed) => {
    for await (const page of listPages(reader, group, version, names.plural, pageSize)) {
      if (failed()) return
      const files = page.map((item) => {
        const meta = (item as { metadata?: { name?: unknown; namespace?: unknown } }).metadata
        if (typeof meta?.name !== 'string')
          throw new Error(`a ${names.kind} in ${group}/${version} has no name`)
        const ns = typeof meta.namespace === 'string' ? [meta.namespace] : []
        return { segments: [group, version, ...ns, names.kind], file: `${meta.name}.yaml`, doc: item }
      })
      await writer.write(files)
      customResources += files.length
    }
  })
  return { crds: crds.length, customResources }
}

/**
 * A list's pages in order; the next page is requested as soon as one arrives, so that the API
 * server prepares it while this one is written.
 */
async function* listPages(
  reader: ClusterReader,
  group: string,
  version: string,
  plural: string,
  limit: number,
): AsyncGenerator<unknown[]> {
  const request = (token?: string) => {
    const page = reader.listPage(group, version, plural, limit, token)
    page.catch(() => {}) // awaited below; kept from being unhandled if the consumer stops first
    return page
  }
  let next = request()
  for (;;) {
    const page = await next
    if (!page) return // the version is not served (404): nothing to back up
    if (page.continueToken) next = request(page.continueToken)
    yield page.items
    if (!page.continueToken) return
  }
}

function asCrd(item: unknown): Crd {
  const c = item as Partial<Crd> | null
  const ok =
    typeof c?.metadata?.name === 'string' &&
    typeof c.spec?.group === 'string' &&
    typeof c.spec.names?.plural === 'string' &&
    typeof c.spec.names.kind === 'string' &&
    Array.isArray(c.spec.versions)
  if (!ok)
    throw new Error(`the API returned a CustomResourceDefinition without name, group, names or versions`)
  return c as Crd
}

interface BackupFile {
  segments: readonly string[]
  file: string
  doc: unknown
}

/** Writes a page of objects as YAML files, creating each folder once. */
class BackupWriter {
  private readonly made = new Set<string>()

  constructor(private readonly root: string) {}

  async write(files: readonly BackupFile[]): Promise<void> {
    const out = files.map(({ segments, file, doc }) => {
      const dir = path.join(this.root, ...segments.map(safeSegment))
      return { dir, file: path.join(dir, safeSegment(file)), data: stringifyYaml(doc) }
    })
    for (const dir of new Set(out.map((f) => f.dir))) {
      if (this.made.has(dir)) continue
      await mkdir(dir, { recursive: true, mode: 0o700 })
      this.made.add(dir)
    }
    try {
      writeNewSecretFilesSync(out)
    } catch (err) {
      throw new Error('writing the backup', { cause: err })
    }
  }
}

/** Names come from the API; one that could climb out of the backup folder is refused. */
function safeSegment(segment: string): string {
  if (!segment || segment === '.' || segment === '..' || /[/\\\0]/.test(segment)) {
    throw new Error(
      `refusing to back up an object whose name or group ${JSON.stringify(segment)} is not a safe file name`,
    )
  }
  return segment
}

export interface ChartBackup {
  /** The values file helm gets for this release. */
  valuesFile: string
}

/** Saves the values, the rendered target chart and what is installed now, for one release. */
export async function backupChart(helm: Helm, release: PlannedRelease, dir: string): Promise<ChartBackup> {
  const { target } = release
  const chartDir = path.join(dir, 'helm-charts', safeSegment(target.name))
  await mkdir(chartDir, { recursive: true, mode: 0o700 })
  const save = (name: string, text: string) => writeSecretFile(path.join(chartDir, name), text, 'exclusive')
  const valuesFile = path.join(chartDir, 'overrides.yaml')
  await save('overrides.yaml', stringifyYaml(target.values))
  await save('rendered.yaml', await helm.template(target, valuesFile))
  if (release.installed !== undefined) {
    await save('installed-values.yaml', await helm.installedValues(target.name, target.namespace))
    await save('installed-manifest.yaml', await helm.installedManifest(target.name, target.namespace))
  }
  return { valuesFile }
}
