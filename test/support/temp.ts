/** Temp dirs for tests, each removed afterwards whatever happens. */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

export interface TempDir {
  dir: string
  cleanup(): Promise<void>
}

/** A fresh dir under the OS temp dir; call `cleanup` in the matching after/afterEach hook. */
export async function makeTempDir(prefix = 'constell-test-'): Promise<TempDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix))
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) }
}

/** Runs `fn` in a fresh temp dir and removes it afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>, prefix?: string): Promise<T> {
  const { dir, cleanup } = await makeTempDir(prefix)
  try {
    return await fn(dir)
  } finally {
    await cleanup()
  }
}
