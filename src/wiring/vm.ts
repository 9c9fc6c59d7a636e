/**
 * The node VM image with its production parts: this package's files and this process's Node.js
 * runtime as inputs, mmdebstrap, npm and mke2fs through the process runner, the package's
 * .cache/vm-images (or CONSTELL_VM_CACHE) as the cache.
 */
import { ensureImage, pruneImages, staleImages, type ImageResult } from '../lib/vm/index.js'
import { packageFile } from '../lib/paths.js'
import { createRunner } from '../lib/system/index.js'

/** Fixed timestamps for what the build writes (2025-01-01T00:00:00Z). */
const IMAGE_SOURCE_DATE_EPOCH = 1_735_689_600

export const vmImageCacheDir = (env: NodeJS.ProcessEnv = process.env) =>
  env.CONSTELL_VM_CACHE ?? packageFile('.cache', 'vm-images')

export function ensureNodeImage(
  progress: (line: string) => void,
  { cacheDir = vmImageCacheDir(), signal }: { cacheDir?: string; signal?: AbortSignal } = {},
): Promise<ImageResult> {
  return ensureImage(
    {
      packageDir: packageFile(),
      nodeBinary: process.execPath,
      nodeVersion: process.version,
      cacheDir,
      sourceDateEpoch: IMAGE_SOURCE_DATE_EPOCH,
      progress,
      signal,
    },
    createRunner(),
  )
}

/** The image for this version, and with `prune` every other cached image removed. */
export async function buildNodeImage(
  opts: { cacheDir: string; prune: boolean; signal?: AbortSignal },
  progress: (line: string) => void,
): Promise<ImageResult & { pruned: string[] }> {
  const image = await ensureNodeImage(progress, opts)
  return { ...image, pruned: opts.prune ? await pruneImages(opts.cacheDir, image.manifest) : [] }
}

/**
 * A line for the operator when the cache holds other versions' images (about 1 GiB each, one per
 * build of the project): each rebuild adds one, and only `mini image --prune` removes them.
 */
export async function staleImagesNote(cacheDir: string, image: ImageResult): Promise<string | undefined> {
  const stale = await staleImages(cacheDir, image.manifest)
  if (stale.length === 0) return undefined
  return `the image cache ${cacheDir} also holds other versions' images or bases (${stale.length}, about 1 GiB each): \`constellation mini image --prune\` removes them (a VM cluster still running on one needs it to power its nodes on again)`
}
