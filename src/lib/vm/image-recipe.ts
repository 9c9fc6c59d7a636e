/**
 * What a node's virtual-machine image is made of, as data: the Debian packages, the project's files
 * and units, and the hash of all of it that names the image in the cache. Building it (image.ts)
 * does the I/O; nothing here touches the outside world but reading the inputs to hash them.
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import path from 'node:path'

/** Bump when the build steps change in a way the inputs below do not show. */
export const IMAGE_RECIPE_VERSION = 1

export const DEBIAN_SUITE = 'bookworm'
export const DEBIAN_MIRROR = 'http://deb.debian.org/debian'

/**
 * A node image's Debian packages (mmdebstrap --variant=minbase adds only Essential ones): the
 * kernel and its modules (dm-crypt, dm-integrity, tpm_tis, virtio), an initramfs to find the root
 * disk, systemd as init, what `state-disk setup` runs (cryptsetup, mkfs.ext4, mount, blkid), ip(8),
 * tpm2-tools for inspecting the TPM, libstdc++ for the Node.js runtime, and QEMU's guest agent, the
 * way `mini exec` reaches a machine without a network login.
 */
export const IMAGE_PACKAGES = [
  'linux-image-amd64',
  'initramfs-tools',
  'systemd',
  'systemd-sysv',
  'udev',
  'kmod',
  'cryptsetup-bin',
  'e2fsprogs',
  'mount',
  'util-linux',
  'iproute2',
  'tpm2-tools',
  'libstdc++6',
  'qemu-guest-agent',
] as const

/**
 * What the initramfs loads to find the root file system: virtio's PCI transport, its block driver
 * and ext4 (MODULES=list). Debian's default, MODULES=most, packs every storage driver: a 36 MB
 * initramfs that took about 35 s of the image's build and seconds of every emulated boot to unpack
 * (16 s after a reset); this one is about 6 MB. Everything else loads from the root file system.
 */
export const INITRAMFS_MODULES = ['virtio_pci', 'virtio_blk', 'ext4'] as const

/** An mmdebstrap hook (sh, the chroot as $1) run before any package: the initramfs's settings. */
export const INITRAMFS_SETUP_HOOK = [
  'mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"',
  'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/constellation-vm"',
  `printf '%s\\n' ${INITRAMFS_MODULES.join(' ')} > "$1/usr/share/initramfs-tools/modules.d/constellation-vm"`,
].join(' && ')

/** mmdebstrap's options beyond the package list (part of the base's cache key). */
export const MMDEBSTRAP_OPTIONS = [
  '--variant=minbase',
  `--setup-hook=${INITRAMFS_SETUP_HOOK}`,
  '--mode=root',
  '--format=tar',
  // documentation and manual pages are no use on a node (dpkg's patterns are globs, one each)
  '--dpkgopt=path-exclude=/usr/share/doc/*',
  '--dpkgopt=path-exclude=/usr/share/man/*',
  '--dpkgopt=path-exclude=/usr/share/info/*',
  // copyright files stay: what the image ships says under which licence
  '--dpkgopt=path-include=/usr/share/doc/*/copyright',
] as const

/**
 * The project's files in the image, under /usr/lib/constellation (paths relative to the package):
 * the CLI and its bundle, the production dependencies' manifest, the protos, the simulator (the
 * kubeadm stand-in the nodes run: Kubernetes stays SIMULATED) and the unit templates.
 */
export const PROJECT_FILES = [
  'bin',
  'dist',
  'package.json',
  'package-lock.json',
  'proto',
  'simulator',
  'templates',
] as const

export interface ImageInputs {
  /** The package's folder (holds PROJECT_FILES). */
  packageDir: string
  /** The Node.js executable that goes into the image (this process's, Node ≥ 20). */
  nodeBinary: string
}

/**
 * The Debian base's cache key: the part that takes minutes (mmdebstrap) changes only with the
 * package list, so a new build of the project reuses it.
 */
export function baseInputsHash(): string {
  return createHash('sha256')
    .update(
      JSON.stringify({
        recipe: IMAGE_RECIPE_VERSION,
        suite: DEBIAN_SUITE,
        mirror: DEBIAN_MIRROR,
        packages: IMAGE_PACKAGES,
        options: MMDEBSTRAP_OPTIONS,
      }),
    )
    .digest('hex')
    .slice(0, 16)
}

/** The image's cache key: the base's and every project input's bytes. */
export async function imageInputsHash(inputs: ImageInputs): Promise<string> {
  const hash = createHash('sha256')
  hash.update(baseInputsHash())
  const files = [
    ...(await listFiles(inputs.packageDir, PROJECT_FILES)).map((rel) => ({
      name: `project/${rel}`,
      file: path.join(inputs.packageDir, rel),
    })),
    { name: 'node', file: inputs.nodeBinary },
  ]
  for (const { name, file } of files) {
    hash.update(`\0${name}\0`)
    await new Promise<void>((resolve, reject) =>
      createReadStream(file)
        .on('data', (chunk) => hash.update(chunk))
        .on('end', resolve)
        .on('error', reject),
    )
  }
  return hash.digest('hex').slice(0, 16)
}

/** Every regular file under the given entries (files or folders), relative to `dir`, sorted. */
async function listFiles(dir: string, entries: readonly string[]): Promise<string[]> {
  const out: string[] = []
  for (const entry of entries) {
    const info = await stat(path.join(dir, entry)).catch((cause: unknown) => {
      throw new Error(`image input ${path.join(dir, entry)} is missing (run \`npm run build\`)`, { cause })
    })
    if (info.isFile()) out.push(entry)
    else
      for (const rel of await readdir(path.join(dir, entry), { recursive: true }))
        if ((await stat(path.join(dir, entry, rel))).isFile()) out.push(path.join(entry, rel))
  }
  return out.sort()
}

/** The units the image installs in /etc/systemd/system and enables, with the files beside them. */
export interface GuestFiles {
  /** The project's units (templates/systemd), unchanged: the image's paths are production's. */
  projectUnits: string
  /** mini's verification service unit (templates/mini). */
  miniUnits: string
  /** The VM's own: fw_cfg setup unit and script, journald to the serial console (templates/vm). */
  vmDir: string
}

export const guestFiles = (packageDir: string): GuestFiles => ({
  projectUnits: path.join(packageDir, 'templates/systemd'),
  miniUnits: path.join(packageDir, 'templates/mini'),
  vmDir: path.join(packageDir, 'templates/vm'),
})
