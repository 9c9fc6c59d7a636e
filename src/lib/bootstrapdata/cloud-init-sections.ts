/**
 * One pure function per cloud-config section (capi.md §3), as cluster-api keeps one template per
 * section. Each returns the section's value, or undefined when the section is left out: the
 * cloud-init schema rejects empty lists.
 */
import { USER_DATA_PATHS } from '../paths.js'
import { dropUndefined } from './drop-undefined.js'
import type { BootstrapPlan, BootstrapUser, DiskSetup, NodeFile } from './types.js'

export const SENTINEL_COMMAND =
  'mkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete'

type Section = Record<string, unknown>

/**
 * The plan's files, then the kubeadm config runcmd points at. Only the kubeadm config may refer to
 * instance data (CABPK's `nodeRegistration.name: '{{ ds.meta_data.local_hostname }}'`); every other
 * file is data and reaches the node byte for byte.
 */
export function writeFilesSection(plan: Pick<BootstrapPlan, 'files' | 'kubeadm'>): Section[] | undefined {
  const files = plan.files.map((f) => writeFile(f, false))
  if (plan.kubeadm) {
    const configPath = USER_DATA_PATHS.cloudInitKubeadmConfig[plan.kubeadm.phase]
    const config = { path: configPath, content: plan.kubeadm.config, owner: 'root:root', permissions: '0640' }
    files.push(writeFile(config, true))
  }
  return files.length > 0 ? files : undefined
}

export function bootcmdSection(bootCommands: readonly string[]): string[] | undefined {
  return bootCommands.length > 0 ? [...bootCommands] : undefined
}

/**
 * Commands in order: pre, kubeadm, enabled units, post. runcmd items are independent, so only
 * the kubeadm line carries the sentinel that tells infrastructure providers it succeeded.
 */
export function runcmdSection(
  plan: Pick<BootstrapPlan, 'preCommands' | 'kubeadm' | 'enableUnits' | 'postCommands'>,
): string[] | undefined {
  const runcmd = [...plan.preCommands]
  if (plan.kubeadm) {
    const configPath = USER_DATA_PATHS.cloudInitKubeadmConfig[plan.kubeadm.phase]
    const verbosity = plan.kubeadm.verbosity !== undefined ? ` --v ${plan.kubeadm.verbosity}` : ''
    runcmd.push(`kubeadm ${plan.kubeadm.phase} --config ${configPath}${verbosity} && ${SENTINEL_COMMAND}`)
  }
  for (const unit of plan.enableUnits) runcmd.push(`systemctl enable --now ${unit}`)
  runcmd.push(...plan.postCommands)
  return runcmd.length > 0 ? runcmd : undefined
}

export function ntpSection(ntp: BootstrapPlan['ntp']): Section | undefined {
  return ntp ? dropUndefined({ enabled: ntp.enabled, servers: ntp.servers }) : undefined
}

export function usersSection(users: readonly BootstrapUser[]): Section[] | undefined {
  return users.length > 0 ? users.map(user) : undefined
}

/** Partition tables by device. */
export function diskSetupSection(diskSetup: DiskSetup | undefined): Section | undefined {
  if (!diskSetup?.partitions?.length) return undefined
  return Object.fromEntries(
    diskSetup.partitions.map((p) => [
      p.device,
      dropUndefined({ table_type: p.tableType, layout: p.layout, overwrite: p.overwrite }),
    ]),
  )
}

export function fsSetupSection(diskSetup: DiskSetup | undefined): Section[] | undefined {
  if (!diskSetup?.filesystems?.length) return undefined
  return diskSetup.filesystems.map((fs) =>
    dropUndefined({
      label: fs.label,
      filesystem: fs.filesystem,
      device: fs.device,
      partition: fs.partition,
      overwrite: fs.overwrite,
      replace_fs: fs.replaceFS,
      extra_opts: fs.extraOpts,
    }),
  )
}

export function mountsSection(mounts: readonly string[][]): string[][] | undefined {
  return mounts.length > 0 ? [...mounts] : undefined
}

function writeFile(f: NodeFile, mayReferToInstanceData: boolean): Section {
  // A trailing newline, as CABPK's literal blocks always produce; encoded content stays as given.
  const content = f.encoding || f.content.endsWith('\n') ? f.content : `${f.content}\n`
  // Base64 has no "{", so nothing in a body can open Jinja; base64 and gzip+base64 bodies are
  // checked to be base64 already, and a raw gzip body is the same bytes as gzip+base64.
  const asBase64 = !mayReferToInstanceData && content.includes('{') && (!f.encoding || f.encoding === 'gzip')
  return dropUndefined({
    path: f.path,
    encoding: asBase64 ? (f.encoding === 'gzip' ? 'gzip+base64' : 'base64') : f.encoding,
    owner: f.owner,
    permissions: f.permissions,
    append: f.append,
    content: asBase64 ? Buffer.from(content).toString('base64') : content,
  })
}

function user(u: BootstrapUser): Section {
  return dropUndefined({
    name: u.name,
    passwd: u.passwd,
    gecos: u.gecos,
    groups: u.groups,
    homedir: u.homeDir,
    // cloud-init takes days until the account is disabled; "0" disables it at once.
    inactive: u.inactive ? '0' : undefined,
    lock_passwd: u.lockPassword,
    shell: u.shell,
    primary_group: u.primaryGroup,
    sudo: u.sudo,
    ssh_authorized_keys: u.sshAuthorizedKeys,
  })
}
