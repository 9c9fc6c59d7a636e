/** Shared pieces of the bootstrap-data tests: fixtures, deterministic deps, and the real validators. */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cp, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { DEFAULT_STATE_DISK, loadTemplates, type GenerateDeps } from '../../src/lib/bootstrapdata/index.js'
import type { BootstrapPlan } from '../../src/lib/bootstrapdata/types.js'
import { REPO_ROOT } from '../support/cli.js'
import { makeTempDir, withTempDir, type TempDir } from '../support/temp.js'
import { readableIgnition } from './readable-ignition.js'
import { type GenerateOptions } from '../../src/lib/bootstrapdata/generate.js'

const run = promisify(execFile)
export const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/bootstrapdata')
export const GOLDEN = path.join(REPO_ROOT, 'test/golden/bootstrapdata')
/** A plan with nothing in it, for renderer tests to add one thing to. */
export const emptyPlan: BootstrapPlan = {
  files: [],
  bootCommands: [],
  preCommands: [],
  postCommands: [],
  enableUnits: [],
  users: [],
  mounts: [],
}

export const FIXED_NOW = new Date('2026-01-02T03:04:05Z')
/** A fixed bcrypt hash (of "test-init-secret", cost 4), so attested goldens stay stable. */
export const TEST_INIT_SECRET_HASH = '$2b$04$Q5skAuj56q1PkWcYWKVX4ubMNz1GBOVm6qOuLIYIID.pPhlnxzru6'

export async function fixtureText(ready = false): Promise<string> {
  const text = await readFile(path.join(FIXTURES, 'cluster.yaml'), 'utf8')
  return ready ? text.replace('control-plane-ready: "false"', 'control-plane-ready: "true"') : text
}

/** A seeded byte stream (sha256 in counter mode), so tokens in goldens never change. */
export function seededRandom(seed: string): (size: number) => Uint8Array {
  let counter = 0
  return (size) => {
    const out = Buffer.alloc(size)
    for (let off = 0; off < size; off += 32) {
      createHash('sha256').update(`${seed}:${counter++}`).digest().copy(out, off)
    }
    return out
  }
}

export async function testDeps(input: string, overrides: Partial<GenerateDeps> = {}): Promise<GenerateDeps> {
  return {
    now: () => FIXED_NOW,
    randomBytes: seededRandom('bootstrapdata-tests'),
    readInput: async () => input,
    templates: await loadTemplates(),
    objectStore: () => {
      throw new Error('no object store in this test')
    },
    registerToken: async () => {
      throw new Error('no API server in this test')
    },
    initSecretHash: async () => TEST_INIT_SECRET_HASH,
    ...overrides,
  }
}

export function testOptions(dir: string, overrides: Partial<GenerateOptions> = {}): GenerateOptions {
  return {
    inputFile: 'cluster.yaml',
    workspace: dir,
    output: `${dir}/out/`,
    caDir: `${dir}/pki`,
    maxUserDataBytes: 65_536,
    tokenTtlMs: 3_600_000,
    attestationVariant: 'qemu-vtpm',
    stateDisk: DEFAULT_STATE_DISK,
    ...overrides,
  }
}

/** A temp dir holding a copy of the fixture CA set (used as given, so documents are deterministic). */
export async function tempWorkspace(withPki = true): Promise<TempDir> {
  const ws = await makeTempDir('constell-bd-')
  if (withPki) await cp(path.join(FIXTURES, 'pki'), path.join(ws.dir, 'pki'), { recursive: true })
  return ws
}

/** What the tests' nodes find in cloud-init's instance data. */
export const TEST_INSTANCE_DATA = {
  v1: { local_hostname: 'node-1' },
  ds: { meta_data: { local_hostname: 'node-1' } },
}

/**
 * The document as cloud-init parses it: a `## template: jinja` document rendered by the real
 * cloud-init (`cloud-init devel render`) against TEST_INSTANCE_DATA, anything else as it is.
 */
export async function renderedByCloudInit(document: string): Promise<string> {
  if (!document.startsWith('## template: jinja\n')) return document
  return withTempDir(async (dir) => {
    const userData = path.join(dir, 'user-data')
    const instanceData = path.join(dir, 'instance-data.json')
    await writeFile(userData, document)
    await writeFile(instanceData, JSON.stringify(TEST_INSTANCE_DATA))
    const { stdout } = await run('cloud-init', ['devel', 'render', '-i', instanceData, userData])
    return stdout
  }, 'constell-bd-render-')
}

/** `cloud-init schema` of the document cloud-init parses (schema needs `#cloud-config` first). */
export async function validateCloudConfig(document: string): Promise<void> {
  const body = await renderedByCloudInit(document)
  await withFile('user-data.yaml', body, (file) => run('cloud-init', ['schema', '--config-file', file]))
}

export async function validateIgnition(document: string): Promise<void> {
  await withFile('config.ign', document, (file) => run('ignition-validate', [file]))
}

/** Validates with the tool that matches the document's first bytes. */
export async function validateUserData(document: string): Promise<void> {
  if (document.startsWith('{')) await validateIgnition(document)
  else await validateCloudConfig(document)
}

function withFile<T>(name: string, content: string, fn: (file: string) => Promise<T>): Promise<T> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, name)
    await writeFile(file, content)
    return fn(file)
  }, 'constell-bd-validate-')
}

/**
 * The golden of an Ignition document, stored as its readable view (`<name>.readable.json`);
 * UPDATE_GOLDEN=1 rewrites it. Compare both ways: the view for a diff a reviewer can read, and the
 * view compacted back for the exact bytes.
 */
export async function goldenIgnition(name: string, got: string): Promise<string> {
  const file = path.join(GOLDEN, `${name}.readable.json`)
  if (process.env.UPDATE_GOLDEN === '1') await writeFile(file, readableIgnition(got))
  return readFile(file, 'utf8')
}

/** Compares with the golden file; UPDATE_GOLDEN=1 rewrites it. */
export async function golden(name: string, got: string): Promise<string> {
  const file = path.join(GOLDEN, name)
  if (process.env.UPDATE_GOLDEN === '1') await writeFile(file, got)
  return readFile(file, 'utf8')
}
