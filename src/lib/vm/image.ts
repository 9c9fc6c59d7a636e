/**
 * Builds a node's virtual-machine image once per version of its inputs (image-recipe.ts) into a
 * cache folder named by their hash: a root file system (ext4, the disk QEMU boots from through a
 * copy-on-write overlay per node), and the kernel and initramfs it boots with. Everything comes
 * from Debian's mirror (mmdebstrap), the npm registry (the production dependencies, from the lock
 * file) and this package; nothing else is downloaded. Needs root (mmdebstrap's root mode).
 */
import { randomBytes } from 'node:crypto'
import {
  copyFile,
  cp,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises'
import path from 'node:path'
import { exists, readTextIfPresent, runnerWithSignal, type Runner } from '../system/index.js'
import {
  baseInputsHash,
  DEBIAN_MIRROR,
  DEBIAN_SUITE,
  guestFiles,
  IMAGE_PACKAGES,
  imageInputsHash,
  MMDEBSTRAP_OPTIONS,
  PROJECT_FILES,
  type ImageInputs,
} from './image-recipe.js'
import { ROOT_UUID } from './qemu.js'

/** Where the project lives in the image; /usr/bin/constellation points into it. */
export const GUEST_PROJECT_DIR = '/usr/lib/constellation'
export const GUEST_NODE = '/usr/local/bin/node'

/** The files of a built image, in its cache folder. */
export function imageFiles(dir: string) {
  return {
    dir,
    rootDisk: path.join(dir, 'root.img'),
    kernel: path.join(dir, 'vmlinuz'),
    initrd: path.join(dir, 'initrd.img'),
    manifest: path.join(dir, 'manifest.json'),
  }
}
export type ImageFiles = ReturnType<typeof imageFiles>

export interface ImageManifest {
  hash: string
  builtAt: string
  buildSeconds: number
  /** Bytes the root file system's image takes on the host's disk (it is sparse). */
  rootDiskBytes: number
  kernel: string
  nodeVersion: string
  /** Every Debian package in the image with its version (`dpkg-query -W`), since the mirror moves. */
  packages: Record<string, string>
}

export interface ImageResult {
  files: ImageFiles
  manifest: ImageManifest
  /** false: it was in the cache. */
  built: boolean
}

export interface ImageBuildOptions extends ImageInputs {
  cacheDir: string
  /** The Node.js version string of nodeBinary (process.version when it is this process's). */
  nodeVersion: string
  /** Fixed timestamps in what the build writes (mmdebstrap, mke2fs). */
  sourceDateEpoch: number
  progress(line: string): void
  /** Ctrl-C: ends the step that runs (mmdebstrap with its whole session) and leaves no partial file. */
  signal?: AbortSignal
}

/** The image for these inputs: from the cache, or built now. */
export async function ensureImage(opts: ImageBuildOptions, anyRunner: Runner): Promise<ImageResult> {
  const runner = runnerWithSignal(anyRunner, opts.signal)
  const hash = await imageInputsHash(opts)
  const files = imageFiles(path.join(opts.cacheDir, hash))
  const cached = await readTextIfPresent(files.manifest)
  if (cached !== undefined) return { files, manifest: JSON.parse(cached) as ImageManifest, built: false }
  await mkdir(opts.cacheDir, { recursive: true })
  // built beside its final place and renamed: a crash leaves a .build- folder, never half an image
  const work = path.join(opts.cacheDir, `.build-${hash}-${randomBytes(4).toString('hex')}`)
  try {
    const manifest = await buildImage(opts, hash, work, runner)
    opts.signal?.throwIfAborted()
    if (await exists(files.manifest)) return { files, manifest, built: true } // a concurrent build won
    await rename(work, files.dir)
    return { files, manifest, built: true }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

async function buildImage(
  opts: ImageBuildOptions,
  hash: string,
  work: string,
  runner: Runner,
): Promise<ImageManifest> {
  const started = Date.now()
  const root = path.join(work, 'root')
  const out = imageFiles(work)
  const env = { ...process.env, SOURCE_DATE_EPOCH: String(opts.sourceDateEpoch) }
  await mkdir(root, { recursive: true })
  const base = await ensureBase(opts, runner, env)
  await runner.run('tar', ['-x', '-p', '--numeric-owner', '-f', base, '-C', root])
  opts.progress(
    `the project: ${PROJECT_FILES.join(', ')}, its production dependencies, Node.js ${opts.nodeVersion}`,
  )
  await installProject(opts, root, runner)
  opts.progress(
    "systemd units: the project's (production paths), mini's verification service, the VM's fw_cfg setup",
  )
  await installUnits(opts.packageDir, root, runner)
  const kernel = await bootFiles(root, out)
  const packages = parsePackages(
    (
      await runner.run('dpkg-query', [
        `--admindir=${path.join(root, 'var/lib/dpkg')}`,
        '-W',
        '-f',
        '${Package}\t${Version}\n',
      ])
    ).stdout,
  )
  opts.progress('root file system: ext4 (mke2fs -d), fixed UUID and hash seed')
  await makeRootDisk(root, out.rootDisk, runner, env)
  await rm(root, { recursive: true, force: true })
  const manifest: ImageManifest = {
    hash,
    builtAt: new Date().toISOString(),
    buildSeconds: Math.round((Date.now() - started) / 100) / 10,
    rootDiskBytes: (await stat(out.rootDisk)).blocks * 512,
    kernel,
    nodeVersion: opts.nodeVersion,
    packages,
  }
  await writeFile(out.manifest, JSON.stringify(manifest, null, 2) + '\n')
  return manifest
}

/**
 * The Debian part of the image (mmdebstrap, minutes), as a tarball cached under its own key
 * (base-<hash>.tar): it changes with the package list only.
 */
async function ensureBase(opts: ImageBuildOptions, runner: Runner, env: NodeJS.ProcessEnv): Promise<string> {
  const file = path.join(opts.cacheDir, `base-${baseInputsHash()}.tar`)
  if (await exists(file)) {
    opts.progress(`Debian base: cached (${file})`)
    return file
  }
  opts.progress(`mmdebstrap: Debian ${DEBIAN_SUITE} minbase + ${IMAGE_PACKAGES.join(', ')}`)
  const partial = `${file}.${randomBytes(4).toString('hex')}.partial`
  try {
    // in a session of its own: something under mmdebstrap signals its whole process group while
    // packages install, which would otherwise end this command as if Ctrl-C had been pressed; an
    // abort sends SIGTERM to that whole session (mmdebstrap then unmounts and removes its chroot)
    await runner.run(
      'mmdebstrap',
      [...MMDEBSTRAP_OPTIONS, `--include=${IMAGE_PACKAGES.join(',')}`, DEBIAN_SUITE, partial, DEBIAN_MIRROR],
      { env, ownSession: true },
    )
    opts.signal?.throwIfAborted()
    await rename(partial, file)
  } finally {
    await rm(partial, { force: true })
  }
  return file
}

/**
 * The project as an installed package would be: its files, its production dependencies (`npm ci
 * --omit=dev` from the lock file), the Node.js runtime (this host's executable: Debian bookworm's
 * own nodejs is 18, and the image is the same Debian release as the hosts it is built on, whose
 * libc and libstdc++ it links against), and /usr/bin/constellation, which the units run.
 */
async function installProject(opts: ImageBuildOptions, root: string, runner: Runner) {
  const dir = path.join(root, GUEST_PROJECT_DIR)
  await mkdir(dir, { recursive: true })
  for (const entry of PROJECT_FILES)
    await cp(path.join(opts.packageDir, entry), path.join(dir, entry), { recursive: true })
  await runner.run(
    'npm',
    ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
    {
      cwd: dir,
    },
  )
  await copyFile(opts.nodeBinary, path.join(root, GUEST_NODE))
  await symlink(path.join(GUEST_PROJECT_DIR, 'bin/run.js'), path.join(root, 'usr/bin/constellation'))
}

/** The project's units that run kubeadm (init, join, upgrade): the simulator's is theirs in a VM. */
const SIMULATOR_UNITS = ['constellation-bootstrapper.service', 'constellation-upgrade-agent.service']

async function installUnits(packageDir: string, root: string, runner: Runner) {
  const files = guestFiles(packageDir)
  const unitDir = path.join(root, 'etc/systemd/system')
  const units: string[] = []
  for (const dir of [files.projectUnits, files.miniUnits])
    for (const unit of (await readdir(dir)).filter((f) => f.endsWith('.service'))) {
      await copyFile(path.join(dir, unit), path.join(unitDir, unit))
      units.push(unit)
    }
  const guestUnit = 'constellation-vm-guest.service'
  await copyFile(path.join(files.vmDir, guestUnit), path.join(unitDir, guestUnit))
  await copyFile(
    path.join(files.vmDir, 'vm-guest-setup'),
    path.join(root, GUEST_PROJECT_DIR, 'vm-guest-setup'),
  )
  // Kubernetes SIMULATED: the API's port on control planes (started by vm-guest-setup, not enabled),
  // and where the units that run kubeadm find the simulator's folder and admin kubeconfig
  for (const unit of ['mini-api-proxy.socket', 'mini-api-proxy.service'])
    await copyFile(path.join(files.vmDir, unit), path.join(unitDir, unit))
  for (const unit of SIMULATOR_UNITS) {
    const dropIn = path.join(unitDir, `${unit}.d`)
    await mkdir(dropIn, { recursive: true })
    await copyFile(path.join(files.vmDir, 'kubernetes-simulator.conf'), path.join(dropIn, 'simulator.conf'))
  }
  // the kubelet unit a node image ships, as the simulator's stand-in (started by kubeadm, not enabled)
  const kubelet = path.join(packageDir, 'simulator/kubelet-unit')
  await writeFile(
    path.join(unitDir, 'kubelet.service'),
    (await readFile(path.join(kubelet, 'kubelet.service'), 'utf8')).replaceAll(
      '/usr/bin/kubelet',
      path.join(GUEST_PROJECT_DIR, 'simulator/kubelet-unit/kubelet'),
    ),
  )
  const journald = path.join(root, 'etc/systemd/journald.conf.d')
  await mkdir(journald, { recursive: true })
  await copyFile(path.join(files.vmDir, 'journald-console.conf'), path.join(journald, 'console.conf'))
  const agentDropIn = path.join(unitDir, 'qemu-guest-agent.service.d')
  await mkdir(agentDropIn, { recursive: true })
  await copyFile(path.join(files.vmDir, 'qemu-guest-agent-quiet.conf'), path.join(agentDropIn, 'quiet.conf'))
  await runner.run('systemctl', [`--root=${root}`, 'enable', guestUnit, ...units])
  // the serial console carries the node's log; a login prompt there would only interleave with it
  await runner.run('systemctl', [
    `--root=${root}`,
    'mask',
    'serial-getty@ttyS0.service',
    'getty@tty1.service',
    ...IDLE_HOUSEKEEPING_UNITS,
  ])
  // one image, many machines: each gets its own machine ID at boot
  await writeFile(path.join(root, 'etc/machine-id'), '')
}

/**
 * Debian's housekeeping, of no use on a node that lives minutes and has no LVM or apt to tend:
 * e2scrub_reap alone kept the one emulated vCPU busy for about a minute of every boot (measured with
 * `systemd-analyze blame` in the guest), beside the state disk's format.
 */
const IDLE_HOUSEKEEPING_UNITS = [
  'e2scrub_reap.service',
  'e2scrub_all.timer',
  'apt-daily.timer',
  'apt-daily-upgrade.timer',
  'dpkg-db-backup.timer',
  'fstrim.timer',
]

/** The kernel and initramfs the image's packages installed, copied out for QEMU's -kernel/-initrd. */
async function bootFiles(root: string, out: ImageFiles): Promise<string> {
  const boot = await readdir(path.join(root, 'boot'))
  const kernel = boot.find((f) => f.startsWith('vmlinuz-'))
  const version = kernel?.slice('vmlinuz-'.length)
  if (!kernel || !boot.includes(`initrd.img-${version}`))
    throw new Error(`the image's /boot has no kernel and initramfs of one version (found ${boot.join(', ')})`)
  await copyFile(path.join(root, 'boot', kernel), out.kernel)
  await copyFile(path.join(root, 'boot', `initrd.img-${version}`), out.initrd)
  return version!
}

/** Root file system headroom: the node writes logs and /var/lib state beside the image's files. */
const ROOT_FREE_BYTES = 512 * 1024 * 1024

async function makeRootDisk(root: string, file: string, runner: Runner, env: NodeJS.ProcessEnv) {
  const used = Number((await runner.run('du', ['-sb', root])).stdout.split('\t')[0])
  const mib = Math.ceil((used * 1.2 + ROOT_FREE_BYTES) / (1024 * 1024))
  await runner.run(
    'mke2fs',
    [
      '-q',
      '-F',
      '-t',
      'ext4',
      '-L',
      'root',
      '-U',
      ROOT_UUID,
      '-E',
      `hash_seed=${ROOT_UUID}`,
      '-d',
      root,
      file,
      `${mib}M`,
    ],
    { env },
  )
}

function parsePackages(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of text.split('\n')) {
    const [name, version] = line.split('\t')
    if (name && version) out[name] = version
  }
  return out
}

/**
 * Removes every cached image and Debian base but `keep`'s (about 1 GiB and 650 MiB each), and what
 * an interrupted build left. Only on request: a running VM cluster's overlays name their image as
 * backing file, and its next power-on needs it.
 */
/** What the cache holds besides `keep` and its base: other versions' images and bases, broken builds. */
export async function staleImages(cacheDir: string, keep: ImageManifest): Promise<string[]> {
  const keepBase = `base-${baseInputsHash()}.tar`
  return (await readdir(cacheDir).catch(() => [] as string[]))
    .filter(
      (entry) =>
        (/^[0-9a-f]{16}$/.test(entry) && entry !== keep.hash) ||
        entry.startsWith('.build-') ||
        (/^base-[0-9a-f]{16}\.tar/.test(entry) && entry !== keepBase),
    )
    .map((entry) => path.join(cacheDir, entry))
}

export async function pruneImages(cacheDir: string, keep: ImageManifest): Promise<string[]> {
  const stale = await staleImages(cacheDir, keep)
  for (const entry of stale) await rm(entry, { recursive: true, force: true })
  return stale
}
