/** A LUKS2 state-disk image made by the real cryptsetup, with a cheap PBKDF so tests stay fast. */
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRunner } from '../../src/lib/system/index.js'

export const TEST_PBKDF = { type: 'pbkdf2', iterations: 1000 } as const

export async function createLuksImage(dir: string) {
  const image = path.join(dir, 'state-disk.img')
  const initialKeyFile = path.join(dir, 'initial.key')
  const initialKey = randomBytes(32)
  await writeFile(image, Buffer.alloc(0))
  await writeFile(initialKeyFile, initialKey, { mode: 0o600 })
  const runner = createRunner()
  await runner.run('truncate', ['-s', '20M', image])
  await runner.run('cryptsetup', [
    'luksFormat',
    '--batch-mode',
    '--type',
    'luks2',
    '--pbkdf',
    TEST_PBKDF.type,
    '--pbkdf-force-iterations',
    String(TEST_PBKDF.iterations),
    '--key-file',
    initialKeyFile,
    image,
  ])
  return { image, initialKeyFile, initialKey }
}
