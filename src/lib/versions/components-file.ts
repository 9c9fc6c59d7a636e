/**
 * The components a cluster runs, as a control plane keeps them (nodePaths().componentsFile): init
 * writes what the operator sent, a joining control plane what its ticket carried, and the join
 * service hands them to every node that joins. The node re-checks each one before installing it.
 */
import { readRegularFile } from '../system/index.js'
import type { KubernetesComponent } from './index.js'

/** A few components of a few hundred bytes each. */
const MAX_COMPONENTS_FILE_BYTES = 256 * 1024

export function encodeComponents(components: readonly KubernetesComponent[]): string {
  const plain = components.map(({ url, hash, installPath, extract }) => ({ url, hash, installPath, extract }))
  return JSON.stringify(plain, null, 2) + '\n'
}

/** Reads the file back, naming the entry and field that is wrong. */
export function parseComponents(text: string, file: string): KubernetesComponent[] {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new Error(`${file}: not JSON: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  if (!Array.isArray(doc)) throw new Error(`${file}: want a JSON array of components`)
  return doc.map((entry: unknown, i) => {
    const c = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
    for (const key of ['url', 'hash', 'installPath'] as const)
      if (typeof c[key] !== 'string') throw new Error(`${file}: [${i}].${key}: want a string`)
    if (typeof c.extract !== 'boolean') throw new Error(`${file}: [${i}].extract: want true or false`)
    return {
      url: c.url as string,
      hash: c.hash as string,
      installPath: c.installPath as string,
      extract: c.extract,
    }
  })
}

export async function readComponentsFile(file: string): Promise<KubernetesComponent[]> {
  const bytes = await readRegularFile(file, {
    maxBytes: MAX_COMPONENTS_FILE_BYTES,
    what: 'components file',
    missingHint: 'init (or a control-plane join) writes it on a control plane',
  })
  return parseComponents(bytes.toString('utf8'), file)
}
