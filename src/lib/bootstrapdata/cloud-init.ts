/**
 * Renders a plan as cloud-config (capi.md §3). The `## template: jinja` header makes cloud-init
 * fill instance data such as `{{ ds.meta_data.local_hostname }}` before it parses the YAML, as
 * CABPK's templates rely on. kubeadm runs from runcmd; the sentinel file tells infrastructure
 * providers it succeeded (runcmd items are independent, so only the kubeadm line carries it).
 */
import { stringifyYaml } from '../yaml/index.js'
import type { BootstrapPlan, BootstrapUser, NodeFile } from './types.js'

export const CLOUD_CONFIG_HEADER = '## template: jinja\n#cloud-config\n'
export const SENTINEL_COMMAND =
  'mkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete'
export const CLOUD_INIT_KUBEADM_CONFIG = {
  init: '/run/kubeadm/kubeadm.yaml',
  join: '/run/kubeadm/kubeadm-join-config.yaml',
}

export function renderCloudConfig(plan: BootstrapPlan): string {
  const files = [...plan.files]
  const runcmd = [...plan.preCommands]
  if (plan.kubeadm) {
    const configPath = CLOUD_INIT_KUBEADM_CONFIG[plan.kubeadm.phase]
    files.push({ path: configPath, content: plan.kubeadm.config, owner: 'root:root', permissions: '0640' })
    const verbosity = plan.kubeadm.verbosity !== undefined ? ` --v ${plan.kubeadm.verbosity}` : ''
    runcmd.push(`kubeadm ${plan.kubeadm.phase} --config ${configPath}${verbosity} && ${SENTINEL_COMMAND}`)
  }
  for (const unit of plan.enableUnits) runcmd.push(`systemctl enable --now ${unit}`)
  runcmd.push(...plan.postCommands)
  // The cloud-init schema rejects empty lists, so absent sections are left out.
  const doc: Record<string, unknown> = {}
  if (files.length > 0) doc.write_files = files.map(writeFile)
  if (plan.bootCommands.length > 0) doc.bootcmd = plan.bootCommands
  if (runcmd.length > 0) doc.runcmd = runcmd
  if (plan.ntp) doc.ntp = dropUndefined({ enabled: plan.ntp.enabled, servers: plan.ntp.servers })
  if (plan.users.length > 0) doc.users = plan.users.map(user)
  if (plan.diskSetup?.partitions?.length) {
    doc.disk_setup = Object.fromEntries(
      plan.diskSetup.partitions.map((p) => [
        p.device,
        dropUndefined({ table_type: p.tableType, layout: p.layout, overwrite: p.overwrite }),
      ]),
    )
  }
  if (plan.diskSetup?.filesystems?.length) {
    doc.fs_setup = plan.diskSetup.filesystems.map((fs) =>
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
  if (plan.mounts.length > 0) doc.mounts = plan.mounts
  return CLOUD_CONFIG_HEADER + stringifyYaml(doc)
}

function writeFile(f: NodeFile): Record<string, unknown> {
  // A trailing newline, as CABPK's literal blocks always produce; encoded content stays as given.
  const content = f.encoding || f.content.endsWith('\n') ? f.content : `${f.content}\n`
  return dropUndefined({
    path: f.path,
    encoding: f.encoding,
    owner: f.owner,
    permissions: f.permissions,
    append: f.append,
    content,
  })
}

function user(u: BootstrapUser): Record<string, unknown> {
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

function dropUndefined(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined))
}
