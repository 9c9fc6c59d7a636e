/**
 * A LUKS2 state-disk image as `state-disk setup` leaves a fresh one, made by the real cryptsetup with
 * a cheap PBKDF so tests stay fast: a random key in keyslot 0, the `new` mark, and the key in the
 * node's runtime dir when a node root is given.
 */
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { nodePaths } from '../../src/lib/paths.js'
import { CryptsetupDisk } from '../../src/lib/statedisk/index.js'
import { createRunner, writeFileAtomic } from '../../src/lib/system/index.js'

export const TEST_PBKDF = { type: 'pbkdf2', iterations: 1000 } as const

/** An empty image file of the size the tests use: what a new VM's second disk looks like. */
export async function createBlankImage(dir: string): Promise<string> {
  const image = path.join(dir, 'state-disk.img')
  await writeFile(image, Buffer.alloc(0))
  await createRunner().run('truncate', ['-s', '20M', image])
  return image
}

export async function createLuksImage(dir: string, opts: { root?: string } = {}) {
  const image = await createBlankImage(dir)
  const initialKeyFile = opts.root
    ? nodePaths(opts.root).stateDiskInitialKeyFile
    : path.join(dir, 'initial.key')
  const initialKey = randomBytes(32)
  await writeFileAtomic(initialKeyFile, initialKey)
  const disk = new CryptsetupDisk(image, createRunner(), path.join(dir, 'scratch'), TEST_PBKDF)
  await disk.format(initialKey)
  await disk.writeMark('new')
  return { image, initialKeyFile, initialKey }
}
