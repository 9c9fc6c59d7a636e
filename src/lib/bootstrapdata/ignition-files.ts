/**
 * Ignition `storage.files` entries (spec 3.3.0): contents travel as data URLs. Besides the plan's
 * own files, Ignition needs files for what cloud-init has keys for: the kubeadm config and script,
 * sudo rules and password logins, and ntp servers.
 */
import { USER_DATA_PATHS } from '../paths.js'
import { SENTINEL_COMMAND } from './cloud-init-sections.js'
import { dropUndefined } from './drop-undefined.js'
import type { BootstrapTemplates } from './templates.js'
import type { BootstrapPlan, BootstrapUser, NodeFile } from './types.js'

const { ignitionKubeadmConfig: KUBEADM_CONFIG, ignitionKubeadmScript: KUBEADM_SCRIPT } = USER_DATA_PATHS
const PASSWORD_LOGIN_DROP_IN = '/etc/ssh/sshd_config.d/50-bootstrap-password-login.conf'

type Json = Record<string, unknown>

/** `data:` URL of some bytes: percent-encoded text when that is shorter (readable), base64 otherwise. */
export function dataUrl(content: Uint8Array | string): string {
  const base64 = `data:;base64,${Buffer.from(content).toString('base64')}`
  if (typeof content !== 'string') return base64
  const text = `data:,${encodeURIComponent(content)}`
  return text.length <= base64.length ? text : base64
}

/** Ignition names a user or group by name or by id; validation has checked the owner's shape. */
const account = (nameOrId: string | undefined): Json | undefined =>
  !nameOrId ? undefined : /^[0-9]+$/.test(nameOrId) ? { id: Number(nameOrId) } : { name: nameOrId }

export function ignitionFile(f: NodeFile): Json {
  const [user, group] = f.owner?.split(':') ?? []
  const source =
    f.encoding === 'base64'
      ? dataUrl(Buffer.from(f.content, 'base64'))
      : dataUrl(f.content.endsWith('\n') ? f.content : `${f.content}\n`)
  return dropUndefined({
    path: f.path,
    mode: f.permissions !== undefined ? parseInt(f.permissions, 8) : undefined,
    user: account(user),
    group: account(group),
    // Spec 3 keeps an existing file unless told otherwise; CABPK's files replace what the image has.
    overwrite: f.append ? undefined : true,
    contents: f.append ? undefined : { source },
    append: f.append ? [{ source }] : undefined,
  })
}

/**
 * The kubeadm config and the script kubeadm.service runs. The script moves the config away on
 * success, so the unit (ConditionPathExists) runs kubeadm once.
 */
export function kubeadmFiles(
  plan: Pick<BootstrapPlan, 'kubeadm' | 'preCommands' | 'postCommands'>,
  templates: Pick<BootstrapTemplates, 'kubeadmPrologue'>,
): Json[] {
  const kubeadm = plan.kubeadm
  if (!kubeadm) return []
  const verbosity = kubeadm.verbosity !== undefined ? ` --v ${kubeadm.verbosity}` : ''
  const script =
    [
      templates.kubeadmPrologue.trimEnd(),
      ...plan.preCommands,
      `kubeadm ${kubeadm.phase} --config ${KUBEADM_CONFIG}${verbosity}`,
      SENTINEL_COMMAND,
      `mv ${KUBEADM_CONFIG} /tmp/`,
      ...plan.postCommands,
    ].join('\n') + '\n'
  return [
    ignitionFile({
      path: KUBEADM_CONFIG,
      content: kubeadm.config,
      owner: 'root:root',
      permissions: '0600',
    }),
    ignitionFile({ path: KUBEADM_SCRIPT, content: script, owner: 'root:root', permissions: '0700' }),
  ]
}

/** sudo rules and password SSH logins, which Ignition's passwd section cannot express. */
export function accountFiles(users: readonly BootstrapUser[]): Json[] {
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
    files.push(ignitionFile({ path: PASSWORD_LOGIN_DROP_IN, content, permissions: '0600' }))
  }
  return files
}

export function ntpFiles(ntp: BootstrapPlan['ntp']): Json[] {
  if (!ntp?.servers?.length) return []
  const content =
    [
      ...ntp.servers.map((s) => `server ${s}`),
      'restrict default nomodify nopeer noquery limited kod',
      'restrict 127.0.0.1',
      'restrict [::1]',
    ].join('\n') + '\n'
  return [ignitionFile({ path: '/etc/ntp.conf', content, permissions: '0644' })]
}
