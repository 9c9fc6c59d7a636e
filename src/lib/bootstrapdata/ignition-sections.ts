/**
 * One pure function per Ignition config section (spec 3.3.0): storage.files, storage.disks,
 * storage.filesystems, passwd.users and systemd.units. Each returns undefined when its section is
 * left out.
 */
import { dropUndefined } from './drop-undefined.js'
import { accountFiles, ignitionFile, kubeadmFiles, ntpFiles } from './ignition-files.js'
import type { BootstrapTemplates } from './templates.js'
import type { BootstrapPlan, BootstrapUser, DiskSetup } from './types.js'

type Json = Record<string, unknown>

/** Always present (possibly empty): the plan's files, kubeadm's, then those for users and ntp. */
export function storageFiles(
  plan: BootstrapPlan,
  templates: Pick<BootstrapTemplates, 'kubeadmPrologue'>,
): Json[] {
  return [
    ...plan.files.map(ignitionFile),
    ...kubeadmFiles(plan, templates),
    ...accountFiles(plan.users),
    ...ntpFiles(plan.ntp),
  ]
}

export function storageDisks(diskSetup: DiskSetup | undefined): Json[] | undefined {
  if (!diskSetup?.partitions?.length) return undefined
  return diskSetup.partitions.map((p) => ({
    device: p.device,
    wipeTable: p.overwrite ?? false,
    // layout: true asks for one partition spanning the disk.
    partitions: p.layout ? [{ number: 1 }] : [],
  }))
}

export function storageFilesystems(diskSetup: DiskSetup | undefined): Json[] | undefined {
  if (!diskSetup?.filesystems?.length) return undefined
  return diskSetup.filesystems.map((fs) =>
    dropUndefined({
      device: fs.device,
      format: fs.filesystem,
      wipeFilesystem: fs.overwrite ?? false,
      label: fs.label,
      options: fs.extraOpts,
    }),
  )
}

export function passwdUsers(users: readonly BootstrapUser[]): Json[] | undefined {
  if (users.length === 0) return undefined
  return users.map((u) =>
    dropUndefined({
      name: u.name,
      gecos: u.gecos,
      groups: u.groups
        ?.split(',')
        .map((g) => g.trim())
        .filter((g) => g !== ''),
      homeDir: u.homeDir,
      shell: u.shell,
      passwordHash: u.passwd,
      primaryGroup: u.primaryGroup,
      sshAuthorizedKeys: u.sshAuthorizedKeys,
    }),
  )
}

/** kubeadm.service, ntpd, one .mount unit per mount, then the units the plan enables. */
export function systemdUnits(
  plan: Pick<BootstrapPlan, 'kubeadm' | 'ntp' | 'mounts' | 'enableUnits'>,
  templates: Pick<BootstrapTemplates, 'kubeadmUnit' | 'mountUnit'>,
): Json[] | undefined {
  const units: Json[] = []
  if (plan.kubeadm) units.push({ name: 'kubeadm.service', enabled: true, contents: templates.kubeadmUnit })
  if (plan.ntp?.enabled) units.push({ name: 'ntpd.service', enabled: true })
  for (const mount of plan.mounts) units.push(mountUnit(mount, templates.mountUnit))
  for (const name of plan.enableUnits) units.push({ name, enabled: true })
  return units.length > 0 ? units : undefined
}

function mountUnit(mount: readonly string[], template: string): Json {
  const [device = '', where = '', ...options] = mount
  const what = device.startsWith('/') ? device : `/dev/disk/by-label/${device}`
  const contents = template
    .replaceAll('{{what}}', what)
    .replaceAll('{{where}}', where)
    .replace('{{options}}\n', options.length > 0 ? `Options=${options.join(',')}\n` : '')
  return { name: `${systemdEscapePath(where)}.mount`, enabled: true, contents }
}

/** `systemd-escape --path`: a mount unit must be named after its mount point exactly. */
export function systemdEscapePath(p: string): string {
  const trimmed = p.replace(/^\/+|\/+$/g, '').replace(/\/+/g, '/')
  if (trimmed === '') return '-'
  return trimmed
    .split('/')
    .map((part) =>
      [...Buffer.from(part)]
        .map((b, i) => {
          const c = String.fromCharCode(b)
          const plain = /[A-Za-z0-9:_]/.test(c) || (c === '.' && i > 0)
          return plain ? c : `\\x${b.toString(16).padStart(2, '0')}`
        })
        .join(''),
    )
    .join('-')
}
