import { expect } from '../support/chai.js'
import {
  SENTINEL_COMMAND,
  bootcmdSection,
  diskSetupSection,
  fsSetupSection,
  mountsSection,
  ntpSection,
  runcmdSection,
  usersSection,
  writeFilesSection,
} from '../../src/lib/bootstrapdata/cloud-init-sections.js'

/** One table per section: input → the exact section value, undefined meaning "left out". */
interface Case<I> {
  input: I
  want: unknown
}

function table<I>(section: string, render: (input: I) => unknown, cases: Record<string, Case<I>>): void {
  describe(`cloud-config section ${section}`, () => {
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => expect(render(tc.input)).to.deep.equal(tc.want))
    }
  })
}

const kubeadmJoin = { phase: 'join' as const, config: 'kind: JoinConfiguration\n', verbosity: 5 }

table('write_files', writeFilesSection, {
  'left out when there is nothing to write': { input: { files: [] }, want: undefined },
  'plain content gains a trailing newline; unset fields are left out': {
    input: { files: [{ path: '/a', content: 'x' }] },
    want: [{ path: '/a', content: 'x\n' }],
  },
  'encoded content stays as given': {
    input: { files: [{ path: '/a', content: 'eA==', encoding: 'base64', append: true }] },
    want: [{ path: '/a', encoding: 'base64', append: true, content: 'eA==' }],
  },
  'the kubeadm config comes last, at the path of its phase': {
    input: { files: [], kubeadm: kubeadmJoin },
    want: [
      {
        path: '/run/kubeadm/kubeadm-join-config.yaml',
        owner: 'root:root',
        permissions: '0640',
        content: 'kind: JoinConfiguration\n',
      },
    ],
  },
})

table('bootcmd', bootcmdSection, {
  'left out when empty': { input: [], want: undefined },
  'commands as given': { input: ['echo a'], want: ['echo a'] },
})

const noCommands = { preCommands: [], enableUnits: [], postCommands: [] }
table('runcmd', runcmdSection, {
  'left out when empty': { input: noCommands, want: undefined },
  'pre, kubeadm with verbosity and sentinel, units, post': {
    input: { preCommands: ['pre'], kubeadm: kubeadmJoin, enableUnits: ['x.service'], postCommands: ['post'] },
    want: [
      'pre',
      `kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml --v 5 && ${SENTINEL_COMMAND}`,
      'systemctl enable --now x.service',
      'post',
    ],
  },
  'init without verbosity': {
    input: { ...noCommands, kubeadm: { phase: 'init', config: '' } },
    want: [`kubeadm init --config /run/kubeadm/kubeadm.yaml && ${SENTINEL_COMMAND}`],
  },
})

table('ntp', ntpSection, {
  'left out when unset': { input: undefined, want: undefined },
  'only the fields set': { input: { enabled: true }, want: { enabled: true } },
  'servers too': { input: { enabled: false, servers: ['a'] }, want: { enabled: false, servers: ['a'] } },
})

table('users', usersSection, {
  'left out when empty': { input: [], want: undefined },
  'cloud-init key names; inactive becomes "0"': {
    input: [{ name: 'u', homeDir: '/h', inactive: true, lockPassword: false, primaryGroup: 'g' }],
    want: [{ name: 'u', homedir: '/h', inactive: '0', lock_passwd: false, primary_group: 'g' }],
  },
  'an active user has no inactive key': { input: [{ name: 'u', inactive: false }], want: [{ name: 'u' }] },
})

table('disk_setup', diskSetupSection, {
  'left out without partitions': { input: { filesystems: [] }, want: undefined },
  'partition tables by device': {
    input: { partitions: [{ device: '/dev/sdb', layout: true, tableType: 'gpt' }] },
    want: { '/dev/sdb': { table_type: 'gpt', layout: true } },
  },
})

table('fs_setup', fsSetupSection, {
  'left out without filesystems': { input: undefined, want: undefined },
  'cloud-init key names': {
    input: {
      filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', replaceFS: 'ntfs', extraOpts: ['-F'] }],
    },
    want: [{ filesystem: 'ext4', device: '/dev/sdb', replace_fs: 'ntfs', extra_opts: ['-F'] }],
  },
})

table('mounts', mountsSection, {
  'left out when empty': { input: [], want: undefined },
  'mount entries as given': { input: [['LABEL', '/data']], want: [['LABEL', '/data']] },
})
