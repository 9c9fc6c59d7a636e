import { cp, readFile, readdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { checkInitSecret } from '../../src/lib/kms/index.js'
import { parseBootstrapperNodeConfig } from '../../src/lib/nodeconfig/index.js'
import { NODE_CONFIG_PATH } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { S3RVER_CREDENTIALS, S3Server } from '../support/s3-server.js'
import { FIXTURES, fixtureText, validateUserData } from './helpers.js'
import { readInitSecret } from '../support/init-secret.js'

interface CliResultJson {
  machines: Array<{
    machine: string
    role: string
    file: string
    bytes: number
    offload?: { object: string }
  }>
  waiting: Array<{ machine: string }>
  caFilesCreated: string[]
  adminKubeconfig?: string
}

describe('constellation bootstrap-data generate (CLI)', function () {
  this.timeout(120_000)
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let input: string
  const at = (...p: string[]) => path.join(tmp.dir, ...p)
  beforeEach(async () => {
    tmp = await makeTempDir()
    input = at('cluster.yaml')
    await writeFile(input, await fixtureText())
  })
  afterEach(async () => tmp.cleanup())

  it('generates init data and the CA set, reports it as JSON without secrets, and never overwrites', async () => {
    const args = [
      'bootstrap-data',
      'generate',
      '-f',
      input,
      '--ca-dir',
      at('pki'),
      '-o',
      at('out/'),
      '--json',
    ]
    const res = await runCli(args)
    expect(res.code, res.stderr).to.equal(0)
    const result = JSON.parse(res.stdout) as CliResultJson
    expect(result.machines.map((m) => [m.machine, m.role])).to.deep.equal([['cp-0', 'init']])
    expect(result.waiting.map((w) => w.machine)).to.deep.equal(['cp-1', 'worker-0'])
    expect(result.caFilesCreated).to.have.length(8)
    expect(res.stdout).not.to.match(/PRIVATE KEY|BEGIN/)
    const file = result.machines[0]?.file as string
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    expect((await stat(at('pki/ca.key'))).mode & 0o777).to.equal(0o600)
    expect((await stat(result.adminKubeconfig as string)).mode & 0o777).to.equal(0o600)
    const document = await readFile(file, 'utf8')
    expect(document).to.contain((await readFile(at('pki/ca.key'), 'utf8')).split('\n')[1])
    await validateUserData(document)

    const before = await readFile(file)
    const again = await runCli(args)
    expect(again.code).to.equal(1)
    expect(again.stdout + again.stderr).to.contain(`${file} already exists`)
    expect(await readFile(file)).to.deep.equal(before)
  })

  it('writes a single machine to -o FILE in the requested format', async () => {
    await cp(path.join(FIXTURES, 'pki'), at('pki'), { recursive: true })
    const res = await runCli([
      'bootstrap-data',
      'generate',
      '-f',
      input,
      '--machine',
      'cp-0',
      '--format',
      'ignition',
      '--ca-dir',
      at('pki'),
      '-o',
      at('cp-0.json'),
    ])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.match(/cp-0 \(init, ignition\): .*cp-0\.json, \d+ bytes/)
    await validateUserData(await readFile(at('cp-0.json'), 'utf8'))
  })

  it('-C puts the CA set, the data and the admin kubeconfig in the workspace, not the current directory', async () => {
    const res = await runCli(['bootstrap-data', 'generate', '-f', input, '-C', 'ws', '--json'], {
      cwd: tmp.dir,
    })
    expect(res.code, res.stderr).to.equal(0)
    const result = JSON.parse(res.stdout) as CliResultJson & { caDir: string }
    expect(result.caDir).to.equal(at('ws/pki'))
    expect(result.machines[0]?.file).to.equal(at('ws/cp-0.cloud-config'))
    expect(result.adminKubeconfig).to.equal(at('ws/demo.kubeconfig'))
    expect((await readdir(tmp.dir)).sort()).to.deep.equal(['cluster.yaml', 'ws'])
    expect((await readdir(at('ws'))).sort()).to.deep.equal(['cp-0.cloud-config', 'demo.kubeconfig', 'pki'])
  })

  it("attested data: each node config carries the hash of the workspace's init secret (init from there is accepted)", async () => {
    const config = await runCli(['config', 'generate', 'qemu', '-C', at('ws')])
    expect(config.code, config.stderr).to.equal(0)
    await cp(path.join(FIXTURES, 'attested.yaml'), input)
    const missing = await runCli(
      ['bootstrap-data', 'generate', '-f', input, '--format', 'attested-ignition'],
      {
        cwd: tmp.dir,
      },
    )
    expect(missing.code).to.equal(1)
    expect(missing.stderr).to.match(/attested data needs the workspace's init secret/)
    const res = await runCli(
      [
        'bootstrap-data',
        'generate',
        '-f',
        input,
        '--format',
        'attested-cloud-config',
        '-C',
        at('ws'),
        '--json',
      ],
      { cwd: tmp.dir },
    )
    expect(res.code, res.stderr).to.equal(0)
    const secret = (await readInitSecret(at('ws'))).toString('hex')
    const result = JSON.parse(res.stdout) as CliResultJson
    expect(result.machines.map((m) => m.machine)).to.deep.equal(['cp-0', 'worker-0'])
    for (const m of result.machines) {
      const document = parse(await readFile(m.file, 'utf8')) as {
        write_files: Array<{ path: string; content: string }>
      }
      const installed = document.write_files.find((f) => f.path === NODE_CONFIG_PATH)?.content ?? ''
      const nodeConfig = parseBootstrapperNodeConfig(installed, NODE_CONFIG_PATH)
      expect(await checkInitSecret(Buffer.from(secret, 'hex'), nodeConfig.initSecretHash)).to.equal(true)
      expect(nodeConfig.stateDisk).to.deep.equal({ device: '/dev/sdb' })
    }
  })

  const failures: Record<
    string,
    {
      args: () => string[]
      file?: string
      setup?: (file: string) => Promise<void>
      code: number
      stderr: RegExp
    }
  > = {
    'bad input names file, line, field and object': {
      setup: async (file) =>
        writeFile(file, (await fixtureText()).replace('path: /etc/demo/blob.bin', 'path: /etc/motd')),
      args: () => [],
      code: 1,
      stderr:
        /cluster\.yaml:\d+:\d+: spec\.files\[3\]\.path: path must be unique among all files \(also files\[0\]\) \(KubeadmConfig "cp-0"\)/,
    },
    'join data before the control plane is up': {
      args: () => ['--machine', 'worker-0'],
      code: 1,
      stderr: /Machine "worker-0" cannot get join data yet[\s\S]*Hint: .*control-plane-ready/,
    },
    'a missing input file': {
      file: 'nope.yaml',
      args: () => [],
      code: 1,
      stderr: /input .*nope\.yaml does not exist/,
    },
    'an unknown format': {
      args: () => ['--format', 'butane'],
      code: 2,
      stderr: /Expected --format=butane to be one of/,
    },
    'an upload URL that is not s3://': {
      args: () => ['--upload', 'https://bucket/x'],
      code: 2,
      stderr: /--upload "https:\/\/bucket\/x" is not an s3:\/\/bucket\/prefix URL/,
    },
    'init data over the size limit (no CA keys or kubeconfig left behind)': {
      args: () => ['--max-user-data-bytes', '100'],
      code: 1,
      stderr: /user data for Machine "cp-0" is \d+ bytes, above the limit of 100/,
    },
    '--presign-expiry without --presigned-url': {
      args: () => ['--upload', 's3://userdata/x', '--presign-expiry', '5m'],
      code: 2,
      stderr: /--presign-expiry needs --presigned-url/,
    },
    '--presigned-url without --upload': {
      args: () => ['--presigned-url'],
      code: 2,
      stderr: /--upload/,
    },
    'a presigned URL longer than 7d': {
      args: () => ['--upload', 's3://userdata/x', '--presigned-url', '--presign-expiry', '8d'],
      code: 2,
      stderr: /--presign-expiry may be at most 7d/,
    },
    'a bad token TTL': {
      args: () => ['--token-ttl', 'soon'],
      code: 2,
      stderr: /--token-ttl "soon" is not a duration/,
    },
  }
  for (const [name, tc] of Object.entries(failures)) {
    it(`exits ${tc.code} on ${name}, writing nothing`, async () => {
      if (tc.setup) await tc.setup(input)
      const file = tc.file ? at(tc.file) : input
      const res = await runCli([
        'bootstrap-data',
        'generate',
        '-f',
        file,
        '--ca-dir',
        at('pki'),
        '-o',
        at('out/'),
        ...tc.args(),
      ])
      expect(res.code, res.stderr).to.equal(tc.code)
      expect(res.stderr).to.match(tc.stderr)
      expect(await readdir(tmp.dir)).to.deep.equal(['cluster.yaml'])
    })
  }

  describe('with a local S3-compatible server', () => {
    let s3: S3Server
    before(async () => (s3 = await new S3Server().start(['userdata'])))
    after(async () => s3.stop())

    const env = {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
    }
    /** generate --json with the full data uploaded under `prefix` of the local store. */
    const upload = (prefix: string, ...extra: string[]) =>
      runCli(
        [
          'bootstrap-data',
          'generate',
          '-f',
          input,
          '--ca-dir',
          at('pki'),
          '-o',
          at('out/'),
          '--upload',
          `s3://userdata/${prefix}`,
          '--s3-endpoint',
          s3.endpoint,
          '--json',
          ...extra,
        ],
        { env },
      )

    it('--presigned-url warns on stderr that the URL is a bearer secret; stdout stays JSON', async () => {
      const res = await upload('presigned', '--presigned-url')
      expect(res.code, res.stderr).to.equal(0)
      expect(res.stderr).to.match(
        /anyone who can read the machines' user data can fetch the full bootstrap data, CA keys included, until the URL expires \(in 10m\)/,
      )
      const result = JSON.parse(res.stdout) as CliResultJson
      const stub = await readFile(result.machines[0]?.file as string, 'utf8')
      expect(stub.split('\n')[1]).to.contain('X-Amz-Expires=600')
      const full = await (await fetch(stub.split('\n')[1] as string)).text()
      expect(Buffer.byteLength(full)).to.equal(result.machines[0]?.bytes)
    })

    it('offloads over the limit with credentials from the environment only, and never prints them or the URL', async () => {
      const res = await upload('demo')
      expect(res.code, res.stderr).to.equal(0)
      const result = JSON.parse(res.stdout) as CliResultJson
      expect(result.machines[0]?.offload?.object).to.equal('s3://userdata/demo/cp-0.cloud-config')
      expect(res.stdout + res.stderr).not.to.contain('X-Amz-Signature')
      expect(res.stdout + res.stderr).not.to.match(/SecretAccessKey|AWS_SECRET/)
      expect(res.stderr).not.to.contain('presigned')
      expect(res.stderr, 'no SDK notice about future Node versions').not.to.contain(
        'NodeVersionSupportWarning',
      )
      // the default stub names the object; the node fetches it with its instance role
      const stub = await readFile(result.machines[0]?.file as string, 'utf8')
      expect(stub).to.contain("SOURCE='s3://userdata/demo/cp-0.cloud-config'").and.not.to.contain('X-Amz')
      expect(stub).not.to.contain((await readFile(at('pki/ca.key'), 'utf8')).split('\n')[1])
    })
  })
})
