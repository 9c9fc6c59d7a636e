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
import { writeSecretFile } from '../system/index.js'
import type { ClusterReader } from './kube-reader.js'
import type { PlannedRelease } from './plan.js'

export const BACKUP_PAGE_SIZE = 500
/** Files written at once: enough to keep the disk busy, few enough to stay far from EMFILE. */
const WRITE_CONCURRENCY = 64

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
  for await (const item of listAll(
    reader,
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    pageSize,
  )) {
    const crd = asCrd(item)
    crds.push(crd)
    const doc = {
      ...(item as object),
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
    }
    await writer.write(['crds'], `${crd.metadata.name}.yaml`, doc)
  }
  let customResources = 0
  for (const crd of crds) {
    const { group, names } = crd.spec
    for (const v of crd.spec.versions.filter((x) => x.served !== false)) {
      for await (const item of listAll(reader, group, v.name, names.plural, pageSize)) {
        const meta = (item as { metadata?: { name?: unknown; namespace?: unknown } }).metadata
        if (typeof meta?.name !== 'string')
          throw new Error(`a ${names.kind} in ${group}/${v.name} has no name`)
        const ns = typeof meta.namespace === 'string' ? [meta.namespace] : []
        await writer.write([group, v.name, ...ns, names.kind], `${meta.name}.yaml`, item)
        customResources++
      }
    }
  }
  await writer.flush()
  return { crds: crds.length, customResources }
}

async function* listAll(
  reader: ClusterReader,
  group: string,
  version: string,
  plural: string,
  limit: number,
) {
  let token: string | undefined
  do {
    const page = await reader.listPage(group, version, plural, limit, token)
    if (!page) return // the version is not served (404): nothing to back up
    yield* page.items
    token = page.continueToken
  } while (token)
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

/** Writes YAML files with bounded concurrency, creating each folder once. */
class BackupWriter {
  private readonly made = new Set<string>()
  private readonly inFlight = new Set<Promise<void>>()
  private failure: unknown

  constructor(private readonly root: string) {}

  async write(segments: readonly string[], file: string, doc: unknown): Promise<void> {
    const dir = path.join(this.root, ...segments.map(safeSegment))
    const target = path.join(dir, safeSegment(file))
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      this.made.add(dir)
    }
    // Failures are kept, not left as unhandled rejections, and thrown by the next call.
    const p: Promise<void> = writeSecretFile(target, stringifyYaml(doc), 'exclusive')
      .catch((err: unknown) => void (this.failure ??= err))
      .finally(() => this.inFlight.delete(p))
    this.inFlight.add(p)
    if (this.inFlight.size >= WRITE_CONCURRENCY) await Promise.race(this.inFlight)
    this.throwIfFailed()
  }

  async flush(): Promise<void> {
    await Promise.all(this.inFlight)
    this.throwIfFailed()
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw new Error('writing the backup', { cause: this.failure })
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
