import { parse } from 'yaml'
import { expect } from '../support/chai.js'
import { loadTemplates } from '../../src/lib/bootstrapdata/index.js'
import { renderCloudConfig } from '../../src/lib/bootstrapdata/cloud-init.js'
import { renderKubeadmYaml } from '../../src/lib/bootstrapdata/defaults.js'
import { kubeadmApiVersion } from '../../src/lib/versions/index.js'
import { renderIgnition } from '../../src/lib/bootstrapdata/ignition.js'
import { dataUrl } from '../../src/lib/bootstrapdata/ignition-files.js'
import { systemdEscapePath } from '../../src/lib/bootstrapdata/ignition-sections.js'
import { parseS3Url, renderIgnitionStub } from '../../src/lib/bootstrapdata/offload.js'
import type { BootstrapPlan } from '../../src/lib/bootstrapdata/types.js'
import { validateCloudConfig, validateIgnition, emptyPlan } from './helpers.js'
import { type BootstrapTemplates } from '../../src/lib/bootstrapdata/templates.js'

describe('bootstrap data renderers (pure parts, real validators)', () => {
  let templates: BootstrapTemplates
  before(async () => (templates = await loadTemplates()))

  const cloudCases: Record<
    string,
    { plan: Partial<BootstrapPlan>; check: (doc: Record<string, unknown>) => void }
  > = {
    'gzip+base64 file, boot commands, inactive user, ntp disabled, mbr disk': {
      plan: {
        files: [
          {
            path: '/etc/a.gz',
            content: 'H4sIAAAAAAAAA0tMTAIAQaPFvgIAAAA=',
            encoding: 'gzip+base64',
            permissions: '0644',
          },
        ],
        bootCommands: ['echo "boot"'],
        users: [{ name: 'old', inactive: true, lockPassword: false }],
        ntp: { enabled: false, servers: ['a.example'] },
        diskSetup: {
          partitions: [{ device: '/dev/sdb', layout: true, tableType: 'mbr' }],
          filesystems: [{ device: '/dev/sdb', filesystem: 'xfs', partition: 'auto', replaceFS: 'ntfs' }],
        },
      },
      check: (doc) => {
        expect(doc.bootcmd).to.deep.equal(['echo "boot"'])
        expect(doc.ntp).to.deep.equal({ enabled: false, servers: ['a.example'] })
        expect(doc.users).to.deep.equal([{ name: 'old', inactive: '0', lock_passwd: false }])
        expect((doc.write_files as Array<Record<string, unknown>>)[0]).to.include({ encoding: 'gzip+base64' })
        expect(doc.fs_setup).to.deep.equal([
          { filesystem: 'xfs', device: '/dev/sdb', partition: 'auto', replace_fs: 'ntfs' },
        ])
      },
    },
    'commands with quotes, newlines and YAML-significant characters survive as given': {
      plan: { preCommands: ['echo "a: b" # not a comment', "printf '%s\\n' '*x' '&y'", 'line1\nline2'] },
      check: (doc) =>
        expect(doc.runcmd).to.deep.equal([
          'echo "a: b" # not a comment',
          "printf '%s\\n' '*x' '&y'",
          'line1\nline2',
        ]),
    },
  }
  for (const [name, tc] of Object.entries(cloudCases)) {
    it(`cloud-config: ${name}`, async () => {
      const doc = renderCloudConfig({ ...emptyPlan, ...tc.plan })
      await validateCloudConfig(doc)
      tc.check(parse(doc) as Record<string, unknown>)
    })
  }

  it('Ignition: mounts become systemd-escaped .mount units with options; password logins an sshd drop-in', async () => {
    const doc = renderIgnition(
      {
        ...emptyPlan,
        mounts: [['data_disk', '/var/lib/my-data', 'noatime', 'nofail']],
        users: [{ name: 'u', lockPassword: false }],
      },
      templates,
    )
    await validateIgnition(doc)
    const config = JSON.parse(doc) as {
      systemd: { units: Array<{ name: string; contents: string }> }
      storage: { files: Array<{ path: string }> }
    }
    const unit = config.systemd.units[0]
    expect(unit?.name).to.equal('var-lib-my\\x2ddata.mount')
    expect(unit?.contents).to.contain(
      'What=/dev/disk/by-label/data_disk\nWhere=/var/lib/my-data\nOptions=noatime,nofail\n',
    )
    expect(config.storage.files.map((f) => f.path)).to.deep.equal([
      '/etc/ssh/sshd_config.d/50-bootstrap-password-login.conf',
    ])
  })

  it('Ignition: a sudo rule for a user with a "." goes to a sudoers.d file sudo reads (no ".")', async () => {
    const doc = renderIgnition(
      { ...emptyPlan, users: [{ name: 'john.doe', sudo: 'ALL=(ALL) NOPASSWD:ALL' }] },
      templates,
    )
    await validateIgnition(doc)
    const files = (JSON.parse(doc) as { storage: { files: Array<{ path: string }> } }).storage.files
    expect(files.map((f) => f.path)).to.deep.equal(['/etc/sudoers.d/john_doe'])
  })

  const escapes: Record<string, string> = {
    '/': '-',
    '/var/lib/etcd': 'var-lib-etcd',
    '/mnt/a b/.x': 'mnt-a\\x20b-\\x2ex',
    '//srv//data/': 'srv-data',
  }
  for (const [input, want] of Object.entries(escapes)) {
    it(`systemd path escape: ${JSON.stringify(input)} → ${want}`, () =>
      expect(systemdEscapePath(input)).to.equal(want))
  }

  it('data URLs pick the shorter encoding and round-trip', () => {
    expect(dataUrl('hello world\n')).to.equal('data:,hello%20world%0A')
    const pem = '-----BEGIN X-----\nAAAA+/==\n'.repeat(20)
    const url = dataUrl(pem)
    expect(url.startsWith('data:;base64,')).to.equal(true)
    expect(Buffer.from(url.slice('data:;base64,'.length), 'base64').toString()).to.equal(pem)
  })

  const versions: Record<string, string> = {
    'v1.22.0': 'kubeadm.k8s.io/v1beta3',
    'v1.30.14': 'kubeadm.k8s.io/v1beta3',
    'v1.31.0': 'kubeadm.k8s.io/v1beta4',
    '1.33.1-rc.0': 'kubeadm.k8s.io/v1beta4',
  }
  for (const [version, want] of Object.entries(versions)) {
    it(`kubeadm API for ${version} is ${want}`, () => expect(kubeadmApiVersion(version)).to.equal(want))
  }

  it('v1beta3 keeps argument maps and the control-plane timeout where they were; v1beta4 converts both', () => {
    const docs = [
      {
        kind: 'ClusterConfiguration',
        body: { apiServer: { extraArgs: { b: '2', a: '1' }, timeoutForControlPlane: '4m0s' } },
      },
      { kind: 'InitConfiguration', body: {} },
    ]
    const [c3, i3] = renderKubeadmYaml('v1.30.1', docs)
      .split('---\n')
      .filter(Boolean)
      .map((d) => parse(d) as Record<string, unknown>)
    expect(c3?.apiServer).to.deep.equal({ extraArgs: { a: '1', b: '2' }, timeoutForControlPlane: '4m0s' })
    expect(i3?.timeouts).to.equal(undefined)
    const [c4, i4] = renderKubeadmYaml('v1.31.1', docs)
      .split('---\n')
      .filter(Boolean)
      .map((d) => parse(d) as Record<string, unknown>)
    expect(c4?.apiServer).to.deep.equal({
      extraArgs: [
        { name: 'a', value: '1' },
        { name: 'b', value: '2' },
      ],
    })
    expect(i4?.timeouts).to.deep.equal({ controlPlaneComponentHealthCheck: '4m0s' })
  })

  it("v1beta4 moves a join's discovery.timeout to timeouts.discovery (kubeadm refuses it where it was)", () => {
    const join = [
      { kind: 'JoinConfiguration', body: { discovery: { timeout: '5m0s', bootstrapToken: { token: 't' } } } },
    ]
    const [j3] = renderKubeadmYaml('v1.30.1', join)
      .split('---\n')
      .filter(Boolean)
      .map((d) => parse(d) as Record<string, unknown>)
    expect(j3?.discovery).to.deep.equal({ timeout: '5m0s', bootstrapToken: { token: 't' } })
    const [j4] = renderKubeadmYaml('v1.31.1', join)
      .split('---\n')
      .filter(Boolean)
      .map((d) => parse(d) as Record<string, unknown>)
    expect(j4?.discovery).to.deep.equal({ bootstrapToken: { token: 't' } })
    expect(j4?.timeouts).to.deep.equal({ discovery: '5m0s' })
  })

  it('offload: bucket URLs are checked, stubs are valid and small', async () => {
    expect(parseS3Url('s3://my-bucket/a/b/')).to.deep.equal({ bucket: 'my-bucket', prefix: 'a/b' })
    expect(() => parseS3Url('s3://10.0.0.1/x')).to.throw(/not a valid bucket name/)
    expect(() => parseS3Url('s3://UPPER/x')).to.throw(/not a valid bucket name/)
    expect(() => parseS3Url('s3://my-bucket/a\tb')).to.throw(/may hold only printable ASCII/)
    await validateIgnition(renderIgnitionStub('https://s3.example/b/k?X-Amz-Signature=x', '{}'))
    await validateIgnition(renderIgnitionStub('s3://b/k', '{}'))
  })
})
