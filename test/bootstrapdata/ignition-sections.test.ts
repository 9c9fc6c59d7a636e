import { expect } from '../support/chai.js'
import { emptyPlan } from './helpers.js'
import {
  accountFiles,
  dataUrl,
  ignitionFile,
  kubeadmFiles,
  ntpFiles,
} from '../../src/lib/bootstrapdata/ignition-files.js'
import {
  passwdUsers,
  storageDisks,
  storageFiles,
  storageFilesystems,
  systemdUnits,
} from '../../src/lib/bootstrapdata/ignition-sections.js'
import type { BootstrapPlan } from '../../src/lib/bootstrapdata/types.js'

/** One table per section: input → the exact section value, undefined meaning "left out". */
interface Case<I> {
  input: I
  want: unknown
}

function table<I>(section: string, render: (input: I) => unknown, cases: Record<string, Case<I>>): void {
  describe(`Ignition section ${section}`, () => {
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => expect(render(tc.input)).to.deep.equal(tc.want))
    }
  })
}

const templates = {
  kubeadmPrologue: '#!/bin/sh\n',
  kubeadmUnit: '[Unit]\n',
  mountUnit: '{{what}} {{where}}\n{{options}}\n',
}
const text = (s: string) => ({ source: dataUrl(s) })

table('file entry', ignitionFile, {
  'owner and group split, mode in decimal, replaces what the image has': {
    input: { path: '/a', content: 'x', owner: 'root:adm', permissions: '0640' },
    want: {
      path: '/a',
      mode: 416,
      user: { name: 'root' },
      group: { name: 'adm' },
      overwrite: true,
      contents: text('x\n'),
    },
  },
  'append goes to append, without overwrite': {
    input: { path: '/a', content: 'x\n', append: true },
    want: { path: '/a', append: [text('x\n')] },
  },
  'base64 content is decoded before it is re-encoded': {
    input: { path: '/a', content: Buffer.from('hi\n').toString('base64'), encoding: 'base64' },
    want: { path: '/a', overwrite: true, contents: { source: dataUrl(Buffer.from('hi\n')) } },
  },
})

table(
  'kubeadm files',
  (plan: Pick<BootstrapPlan, 'kubeadm' | 'preCommands' | 'postCommands'>) => kubeadmFiles(plan, templates),
  {
    'none without kubeadm': { input: { preCommands: ['pre'], postCommands: [] }, want: [] },
    'config (0600) and a script that runs once': {
      input: { kubeadm: { phase: 'init', config: 'c\n' }, preCommands: ['pre'], postCommands: ['post'] },
      want: [
        ignitionFile({ path: '/etc/kubeadm.yml', content: 'c\n', owner: 'root:root', permissions: '0600' }),
        ignitionFile({
          path: '/etc/kubeadm.sh',
          content:
            '#!/bin/sh\npre\nkubeadm init --config /etc/kubeadm.yml\nmkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete\nmv /etc/kubeadm.yml /tmp/\npost\n',
          owner: 'root:root',
          permissions: '0700',
        }),
      ],
    },
  },
)

table('account files', accountFiles, {
  'none for plain users': { input: [{ name: 'u' }], want: [] },
  'a sudoers.d file without "." in its name; one sshd drop-in for password logins': {
    input: [
      { name: 'a.b', sudo: 'ALL=(ALL) ALL', lockPassword: false },
      { name: 'c', lockPassword: false },
    ],
    want: [
      ignitionFile({ path: '/etc/sudoers.d/a_b', content: 'a.b ALL=(ALL) ALL\n', permissions: '0440' }),
      ignitionFile({
        path: '/etc/ssh/sshd_config.d/50-bootstrap-password-login.conf',
        content: 'Match User a.b,c\n  PasswordAuthentication yes\n',
        permissions: '0600',
      }),
    ],
  },
})

table('ntp files', ntpFiles, {
  'none without servers': { input: { enabled: true }, want: [] },
  'an ntp.conf naming each server': {
    input: { servers: ['a', 'b'] },
    want: [
      ignitionFile({
        path: '/etc/ntp.conf',
        content:
          'server a\nserver b\nrestrict default nomodify nopeer noquery limited kod\nrestrict 127.0.0.1\nrestrict [::1]\n',
        permissions: '0644',
      }),
    ],
  },
})

table('storage.files', (plan: BootstrapPlan) => storageFiles(plan, templates), {
  'present but empty for an empty plan': { input: emptyPlan, want: [] },
  "the plan's files, then those for users and ntp": {
    input: {
      ...emptyPlan,
      files: [{ path: '/a', content: 'x' }],
      users: [{ name: 'u', sudo: 'ALL' }],
      ntp: { servers: ['s'] },
    },
    want: [
      ignitionFile({ path: '/a', content: 'x' }),
      ...accountFiles([{ name: 'u', sudo: 'ALL' }]),
      ...ntpFiles({ servers: ['s'] }),
    ],
  },
})

table('storage.disks', storageDisks, {
  'left out without partitions': { input: undefined, want: undefined },
  'layout asks for one spanning partition; wipeTable defaults to false': {
    input: {
      partitions: [
        { device: '/dev/sdb', layout: true },
        { device: '/dev/sdc', layout: false, overwrite: true },
      ],
    },
    want: [
      { device: '/dev/sdb', wipeTable: false, partitions: [{ number: 1 }] },
      { device: '/dev/sdc', wipeTable: true, partitions: [] },
    ],
  },
})

table('storage.filesystems', storageFilesystems, {
  'left out without filesystems': { input: { partitions: [] }, want: undefined },
  'Ignition key names': {
    input: { filesystems: [{ device: '/dev/sdb1', filesystem: 'xfs', label: 'data', extraOpts: ['-f'] }] },
    want: [{ device: '/dev/sdb1', format: 'xfs', wipeFilesystem: false, label: 'data', options: ['-f'] }],
  },
})

table('passwd.users', passwdUsers, {
  'left out without users': { input: [], want: undefined },
  'groups split on commas, password as passwordHash': {
    input: [{ name: 'u', groups: 'a, b,,', passwd: '$6$x', homeDir: '/h' }],
    want: [{ name: 'u', groups: ['a', 'b'], homeDir: '/h', passwordHash: '$6$x' }],
  },
})

table('systemd.units', (plan: BootstrapPlan) => systemdUnits(plan, templates), {
  'left out without units': { input: emptyPlan, want: undefined },
  'kubeadm, ntpd, mounts (escaped name, options), then enabled units': {
    input: {
      ...emptyPlan,
      kubeadm: { phase: 'join', config: '' },
      ntp: { enabled: true },
      mounts: [['data', '/var/my-data', 'noatime']],
      enableUnits: ['b.service'],
    },
    want: [
      { name: 'kubeadm.service', enabled: true, contents: '[Unit]\n' },
      { name: 'ntpd.service', enabled: true },
      {
        name: 'var-my\\x2ddata.mount',
        enabled: true,
        contents: '/dev/disk/by-label/data /var/my-data\nOptions=noatime\n',
      },
      { name: 'b.service', enabled: true },
    ],
  },
  'a mount without options has no Options line; a device path stays as given': {
    input: { ...emptyPlan, mounts: [['/dev/sdb1', '/data']] },
    want: [{ name: 'data.mount', enabled: true, contents: '/dev/sdb1 /data\n' }],
  },
})
