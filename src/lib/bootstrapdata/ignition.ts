/**
 * Renders a plan as an Ignition spec 3.3.0 config (capi.md §4, moved from CLC/spec 2.3 to spec 3,
 * which today's Ignition and ignition-validate understand). Files become data URLs; kubeadm runs
 * from kubeadm.service, which runs once because the script moves its config away on success.
 */
import type { BootstrapPlan, BootstrapUser, NodeFile } from './types.js'
import type { BootstrapTemplates } from './templates.js'
import { SENTINEL_COMMAND } from './cloud-init.js'

export const IGNITION_VERSION = '3.3.0'
export const IGNITION_KUBEADM_CONFIG = '/etc/kubeadm.yml'
const KUBEADM_SCRIPT = '/etc/kubeadm.sh'

type Json = Record<string, unknown>

export function renderIgnition(plan: BootstrapPlan, templates: BootstrapTemplates): string {
  const files: Json[] = plan.files.map(ignitionFile)
  const units: Json[] = []
  if (plan.kubeadm) {
    files.push(
      ignitionFile({
        path: IGNITION_KUBEADM_CONFIG,
        content: plan.kubeadm.config,
        owner: 'root:root',
        permissions: '0600',
      }),
    )
    files.push(
      ignitionFile({
        path: KUBEADM_SCRIPT,
        content: kubeadmScript(plan, templates),
        owner: 'root:root',
        permissions: '0700',
      }),
    )
    units.push({ name: 'kubeadm.service', enabled: true, contents: templates.kubeadmUnit })
  }
  files.push(...userFiles(plan.users))
  if (plan.ntp?.servers?.length) {
    files.push(
      ignitionFile({ path: '/etc/ntp.conf', content: ntpConf(plan.ntp.servers), permissions: '0644' }),
    )
  }
  if (plan.ntp?.enabled) units.push({ name: 'ntpd.service', enabled: true })
  for (const mount of plan.mounts) units.push(mountUnit(mount, templates))
  for (const name of plan.enableUnits) units.push({ name, enabled: true })

  const config: Json = { ignition: { version: IGNITION_VERSION } }
  if (plan.users.length > 0) config.passwd = { users: plan.users.map(passwdUser) }
  const storage: Json = { files }
  if (plan.diskSetup?.partitions?.length) {
    storage.disks = plan.diskSetup.partitions.map((p) => ({
      device: p.device,
      wipeTable: p.overwrite ?? false,
      // layout: true asks for one partition spanning the disk.
      partitions: p.layout ? [{ number: 1 }] : [],
    }))
  }
  if (plan.diskSetup?.filesystems?.length) {
    storage.filesystems = plan.diskSetup.filesystems.map((fs) =>
      dropUndefined({
        device: fs.device,
        format: fs.filesystem,
        wipeFilesystem: fs.overwrite ?? false,
        label: fs.label,
        options: fs.extraOpts,
      }),
    )
  }
  config.storage = storage
  if (units.length > 0) config.systemd = { units }
  // Compact: user data is counted in bytes against the provider's limit.
  return `${JSON.stringify(config)}\n`
}

/** `data:` URL of some bytes: percent-encoded text when that is shorter (readable), base64 otherwise. */
export function dataUrl(content: Uint8Array | string): string {
  const base64 = `data:;base64,${Buffer.from(content).toString('base64')}`
  if (typeof content !== 'string') return base64
  const text = `data:,${encodeURIComponent(content)}`
  return text.length <= base64.length ? text : base64
}

function ignitionFile(f: NodeFile): Json {
  const owner = f.owner?.split(':')
  const source =
    f.encoding === 'base64'
      ? dataUrl(Buffer.from(f.content, 'base64'))
      : dataUrl(f.content.endsWith('\n') ? f.content : `${f.content}\n`)
  return dropUndefined({
    path: f.path,
    mode: f.permissions !== undefined ? parseInt(f.permissions, 8) : undefined,
    user: owner?.[0] ? { name: owner[0] } : undefined,
    group: owner?.[1] ? { name: owner[1] } : undefined,
    // Spec 3 keeps an existing file unless told otherwise; CABPK's files replace what the image has.
    overwrite: f.append ? undefined : true,
    contents: f.append ? undefined : { source },
    append: f.append ? [{ source }] : undefined,
  })
}

function kubeadmScript(plan: BootstrapPlan, templates: BootstrapTemplates): string {
  const kubeadm = plan.kubeadm as NonNullable<BootstrapPlan['kubeadm']>
  const verbosity = kubeadm.verbosity !== undefined ? ` --v ${kubeadm.verbosity}` : ''
  return (
    [
      templates.kubeadmPrologue.trimEnd(),
      ...plan.preCommands,
      `kubeadm ${kubeadm.phase} --config ${IGNITION_KUBEADM_CONFIG}${verbosity}`,
      SENTINEL_COMMAND,
      `mv ${IGNITION_KUBEADM_CONFIG} /tmp/`,
      ...plan.postCommands,
    ].join('\n') + '\n'
  )
}

function passwdUser(u: BootstrapUser): Json {
  return dropUndefined({
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
  })
}

/** sudo rules and password SSH logins, which Ignition's passwd section cannot express. */
function userFiles(users: readonly BootstrapUser[]): Json[] {
  const files = users
    .filter((u) => u.sudo !== undefined)
    .map((u) =>
      ignitionFile({
        // sudo skips files in sudoers.d whose name contains a "." (john.doe's rule would never apply)
        path: `/etc/sudoers.d/${u.name.replaceAll('.', '_')}`,
        content: `${u.name} ${u.sudo}\n`,
        permissions: '0440',
      }),
    )
  const passwordLogins = users.filter((u) => u.lockPassword === false).map((u) => u.name)
  if (passwordLogins.length > 0) {
    const content = `Match User ${passwordLogins.join(',')}\n  PasswordAuthentication yes\n`
    files.push(
      ignitionFile({
        path: '/etc/ssh/sshd_config.d/50-bootstrap-password-login.conf',
        content,
        permissions: '0600',
      }),
    )
  }
  return files
}

function ntpConf(servers: readonly string[]): string {
  return (
    [
      ...servers.map((s) => `server ${s}`),
      'restrict default nomodify nopeer noquery limited kod',
      'restrict 127.0.0.1',
      'restrict [::1]',
    ].join('\n') + '\n'
  )
}

function mountUnit(mount: readonly string[], templates: BootstrapTemplates): Json {
  const [device = '', where = '', ...options] = mount
  const what = device.startsWith('/') ? device : `/dev/disk/by-label/${device}`
  const contents = templates.mountUnit
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

function dropUndefined(obj: Json): Json {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined))
}
