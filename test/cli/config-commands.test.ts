import { readdir, readFile, writeFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { Config } from '@oclif/core'
import { expect } from '../support/chai.js'
import { REPO_ROOT, runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { readInitSecret } from '../support/init-secret.js'

describe('constellation CLI (built, as a child process)', () => {
  let ws: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => (ws = await makeTempDir()))
  afterEach(async () => ws.cleanup())

  it('--help lists the topics', async () => {
    const res = await runCli(['--help'])
    expect(res.code).to.equal(0)
    expect(res.stdout).to.match(/TOPICS[\s\S]*config\s+Generate, validate/)
    // bin/dev.js (CONSTELL_TEST_CLI=dev) loads no plugins from node_modules
    if (process.env.CONSTELL_TEST_CLI !== 'dev') expect(res.stdout).to.contain('autocomplete')
  })

  it('--version (answered before oclif loads) prints exactly what oclif would', async () => {
    const config = await Config.load(REPO_ROOT)
    const res = await runCli(['--version'])
    expect(res.code).to.equal(0)
    expect(res.stdout.trim()).to.equal(config.userAgent)
  })

  it('config generate writes both files, and refuses a second run leaving them byte-identical', async () => {
    const first = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, '--json'])
    expect(first.code, first.stderr).to.equal(0)
    const out = JSON.parse(first.stdout) as { config: string; state: string; kubernetesVersion: string }
    expect(out.kubernetesVersion).to.equal('v1.31.13')
    const before = [await readFile(out.config), await readFile(out.state)]
    expect((await stat(out.state)).mode & 0o777).to.equal(0o600)

    const second = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, '-k', 'v1.32'])
    expect(second.code).to.equal(1)
    expect(second.stderr).to.contain('constellation-conf.yaml already exists')
    expect([await readFile(out.config), await readFile(out.state)]).to.deep.equal(before)
  })

  it('config generate -k resolves the minor, and refuses an unsupported one with the list (exit 2)', async () => {
    const ok = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, '-k', '1.30'])
    expect(ok.code, ok.stderr).to.equal(0)
    expect(ok.stdout, 'the next step names the command that learns measurements').to.contain(
      '`constellation config measurements -e HOST`',
    )
    expect(await readFile(path.join(ws.dir, 'constellation-conf.yaml'), 'utf8')).to.contain(
      'kubernetesVersion: v1.30.14',
    )
    const bad = await runCli(['config', 'generate', 'qemu', '-C', path.join(ws.dir, 'other'), '-k', 'v1.99'])
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.contain('supported versions are v1.30.14, v1.31.13, v1.32.9')
  })

  for (const [flag, value, want] of [
    ['--endpoint', 'a b', '--endpoint "a b" is not a host or host:port'],
    ['--endpoint', '10.0.0.1:99999', '--endpoint "10.0.0.1:99999" is not a host or host:port'],
    ['--name', 'Not_A_Name', '--name "Not_A_Name" is not a cluster name'],
  ] as const) {
    it(`config generate ${flag} ${JSON.stringify(value)} is a usage error (exit 2) and writes nothing`, async () => {
      const res = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, flag, value])
      expect(res.code, res.stderr).to.equal(2)
      expect(res.stderr).to.contain(want)
      expect(await readdir(ws.dir)).to.deep.equal([])
    })
  }

  it('-h is --help everywhere, and `version --json` names the supported Kubernetes versions', async () => {
    for (const argv of [['-h'], ['config', 'validate', '-h'], ['init', '-h'], ['upgrade', 'execute', '-h']]) {
      const res = await runCli(argv)
      expect(res.code, `${argv.join(' ')}: ${res.stderr}`).to.equal(0)
      expect(res.stdout, argv.join(' ')).to.contain('USAGE')
    }
    const res = await runCli(['version', '--json'])
    expect(res.code, res.stderr).to.equal(0)
    const info = JSON.parse(res.stdout) as Record<string, unknown>
    expect(info).to.include({
      version: '0.1.0',
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
    })
    expect(info.kubernetesVersions).to.deep.equal(['v1.30.14', 'v1.31.13', 'v1.32.9'])
  })

  for (const [typed, want] of [
    ['upgrade aply', 'Hint: did you mean `constellation upgrade apply`?'],
    ['apply', 'Hint: did you mean `constellation init`?'],
    ['config fetch-measurement', 'Hint: did you mean `constellation config fetch-measurements`?'],
    ['confg validate', 'Hint: did you mean `constellation config validate`?'],
    ['bootstrap-dta', 'Hint: did you mean `constellation bootstrap-data`?'],
    ['xyzzy', 'Hint: run `constellation --help` for the list of commands'],
  ] as const) {
    it(`an unknown command (${typed}) is a usage error with a suggestion, on lines that can be copied`, async () => {
      const res = await runCli(typed.split(' '))
      expect(res.code, res.stderr).to.equal(2)
      expect(res.stderr).to.contain(`Error: "${typed}" is not a constellation command\n`)
      expect(res.stderr.split('\n'), 'the hint is one unwrapped line').to.satisfy((lines: string[]) =>
        lines.some((l) => l.startsWith(want)),
      )
    })
  }

  for (const command of ['init', 'verify', 'version', 'config validate']) {
    it(`a stray argument after \`${command}\` names the argument (exit 2)`, async () => {
      const res = await runCli([...command.split(' '), 'extra'])
      expect(res.code, res.stderr).to.equal(2)
      expect(res.stderr).to.contain(`Error: unexpected argument "extra" for \`constellation ${command}\`\n`)
    })
  }

  it('config validate passes on a generated workspace', async () => {
    await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    const res = await runCli(['config', 'validate', '-C', ws.dir])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.contain('constellation-conf.yaml: valid')
  })

  it('config validate lists an unknown key and an unsupported version, with path and line', async () => {
    await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    const file = path.join(ws.dir, 'constellation-conf.yaml')
    const text = await readFile(file, 'utf8')
    await writeFile(
      file,
      text
        .replace(/kubernetesVersion: .*/, 'kubernetesVersion: v1.99.0')
        .replace('serviceCIDR:', 'colour: blue\nserviceCIDR:'),
    )
    const res = await runCli(['config', 'validate', '-C', ws.dir])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.contain(`${file}:6:1: colour: unknown key`)
    expect(res.stderr).to.contain(
      `${file}:5:1: kubernetesVersion: Kubernetes version "v1.99.0" is not supported; supported versions are v1.30.14, v1.31.13, v1.32.9`,
    )
  })

  it('config validate warns (exit 0) while measurements are the all-zero placeholders', async () => {
    await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    const file = path.join(ws.dir, 'constellation-conf.yaml')
    const res = await runCli(['config', 'validate', '-C', ws.dir])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stderr).to.match(
      new RegExp(
        `Warning: ${file}:\\d+:\\d+: attestation\\.qemuVTPM\\.measurements: are still the all-zero placeholders`,
      ),
    )
    const json = await runCli(['config', 'validate', '-C', ws.dir, '--json'])
    const body = JSON.parse(json.stdout) as { files: Array<{ warnings: Array<{ path: string }> }> }
    expect(body.files[0]?.warnings.map((w) => w.path)).to.deep.equal(['attestation.qemuVTPM.measurements'])

    // real values everywhere but PCR 15, which stays zero on purpose
    const filled = (await readFile(file, 'utf8')).replace(
      /expected: "0{64}"/g,
      `expected: "${'ab'.repeat(32)}"`,
    )
    await writeFile(file, filled.replace(/("15":\n\s+expected: )"(ab)+"/, `$1"${'00'.repeat(32)}"`))
    const real = await runCli(['config', 'validate', '-C', ws.dir])
    expect(real.code, real.stderr).to.equal(0)
    expect(real.stderr).to.not.contain('Warning')
  })

  it('config generate -a tpm-ek writes a tpmEK section; validate warns about its empty roots', async () => {
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, '-a', 'tpm-ek'])
    expect(gen.code, gen.stderr).to.equal(0)
    const file = path.join(ws.dir, 'constellation-conf.yaml')
    const text = await readFile(file, 'utf8')
    expect(text).to.contain('attestation.tpmEK.roots')
    expect(text).to.match(/\n {2}tpmEK:\n {4}measurements:/)
    const json = await runCli(['config', 'validate', '-C', ws.dir, '--json'])
    expect(json.code, json.stderr).to.equal(0)
    const body = JSON.parse(json.stdout) as { files: Array<{ warnings: Array<{ path: string }> }> }
    expect(body.files[0]?.warnings.map((w) => w.path)).to.deep.equal([
      'attestation.tpmEK.measurements',
      'attestation.tpmEK.roots',
    ])
    await writeFile(file, text.replace('roots: []', 'roots:\n      - vendor-root.pem'))
    const bad = await runCli(['config', 'validate', '-C', ws.dir])
    expect(bad.code).to.equal(1)
    expect(bad.stderr).to.match(
      new RegExp(
        `${file}:\\d+:\\d+: attestation\\.tpmEK\\.roots\\[0\\]: reading ${path.join(ws.dir, 'vendor-root.pem')}: ENOENT`,
      ),
    )
  })

  it("config generate azure writes Azure's default CVM section, which validates with warnings", async () => {
    const gen = await runCli(['config', 'generate', 'azure', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    const file = path.join(ws.dir, 'constellation-conf.yaml')
    const text = await readFile(file, 'utf8')
    expect(text).to.match(/\n {2}azureSEVSNP:\n {4}measurements:/)
    expect(text).to.contain('amdRootKey: |\n      -----BEGIN CERTIFICATE-----')
    const json = await runCli(['config', 'validate', '-C', ws.dir, '--json'])
    expect(json.code, json.stderr).to.equal(0)
    const body = JSON.parse(json.stdout) as { files: Array<{ warnings: Array<{ path: string }> }> }
    expect(body.files[0]?.warnings.map((w) => w.path)).to.deep.equal([
      'attestation.azureSEVSNP.measurements',
      'attestation.azureSEVSNP',
    ])
    // a root that is no certificate file is named by file, line and key path
    await writeFile(file, text.replace(/amdRootKey: \|\n( {6}.*\n)+/, 'amdRootKey: ark.pem\n'))
    await writeFile(path.join(ws.dir, 'ark.pem'), 'not a certificate\n')
    const bad = await runCli(['config', 'validate', '-C', ws.dir])
    expect(bad.code).to.equal(1)
    expect(bad.stderr).to.match(
      new RegExp(
        `${file}:\\d+:\\d+: attestation\\.azureSEVSNP\\.amdRootKey: ${path.join(ws.dir, 'ark.pem')} is neither a PEM nor a DER certificate`,
      ),
    )
  })

  it('config generate refuses a variant its provider does not offer (exit 2), naming the allowed ones', async () => {
    const res = await runCli(['config', 'generate', 'aws', '-C', ws.dir, '--attestation', 'azure-tdx'])
    expect(res.code, res.stderr).to.equal(2)
    expect(res.stderr).to.contain('--attestation azure-tdx is not available on aws; it allows aws-sev-snp')
    expect(await readdir(ws.dir)).to.deep.equal([])
    const tdx = await runCli(['config', 'generate', 'azure', '-C', ws.dir, '--attestation', 'azure-tdx'])
    expect(tdx.code, tdx.stderr).to.equal(0)
    expect(await readFile(path.join(ws.dir, 'constellation-conf.yaml'), 'utf8')).to.contain('\n  azureTDX:\n')
  })

  it('config validate requires a component hash and a clean absolute installPath', async () => {
    await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    const file = path.join(ws.dir, 'constellation-conf.yaml')
    const components = [
      'kubernetesComponents:',
      '  - url: https://mirror.example/kubeadm',
      '    hash: ""',
      '    installPath: /run/state/bin/kubeadm',
      '  - url: https://mirror.example/kubelet',
      '    installPath: /run/state/../../etc/kubelet',
      `  - url: https://mirror.example/ok`,
      `    hash: sha256:${'a'.repeat(64)}`,
      '    installPath: /run/state/bin/ok',
    ]
    await writeFile(file, (await readFile(file, 'utf8')) + components.join('\n') + '\n')
    const lineOf = (needle: string) => components.findIndex((l) => l.includes(needle))
    const base = (await readFile(file, 'utf8')).split('\n').length - components.length - 1
    const res = await runCli(['config', 'validate', '-C', ws.dir, '--json'])
    expect(res.code).to.equal(1)
    const body = JSON.parse(res.stdout) as { files: Array<{ problems: Array<Record<string, unknown>> }> }
    expect(body.files[0]?.problems).to.deep.equal([
      {
        file,
        line: base + lineOf('hash: ""') + 1,
        col: 5,
        path: 'kubernetesComponents[0].hash',
        message: 'is required: sha256:<64 hex digits>',
      },
      {
        file,
        line: base + lineOf('/kubelet') + 1,
        col: 5,
        path: 'kubernetesComponents[1].hash',
        message: 'is required: sha256:<64 hex digits>',
      },
      {
        file,
        line: base + lineOf('installPath: /run/state/..') + 1,
        col: 5,
        path: 'kubernetesComponents[1].installPath',
        message:
          '"/run/state/../../etc/kubelet" must be an absolute, normalized path without ".." (e.g. /run/state/bin/kubeadm)',
      },
    ])
  })

  it('config validate --json reports the problems as JSON', async () => {
    const res = await runCli(['config', 'validate', '-C', ws.dir, '--json'])
    expect(res.code).to.equal(1)
    const body = JSON.parse(res.stdout) as { error: { message: string; exitCode: number } }
    expect(body.error.message).to.contain('does not exist')
    expect(body.error.exitCode).to.equal(1)
  })

  it('config schema prints a JSON Schema that names the config keys', async () => {
    const res = await runCli(['config', 'schema'])
    const schema = JSON.parse(res.stdout) as {
      properties: Record<string, unknown>
      additionalProperties: boolean
    }
    expect(Object.keys(schema.properties)).to.include.members([
      'version',
      'name',
      'kubernetesVersion',
      'serviceCIDR',
      'attestation',
    ])
    expect(schema.additionalProperties).to.equal(false)
    const attestation = (schema.properties.attestation as { properties: Record<string, unknown> }).properties
    expect(Object.keys(attestation)).to.deep.equal([
      'qemuVTPM',
      'tpmEK',
      'awsSEVSNP',
      'gcpSEVSNP',
      'azureSEVSNP',
      'qemuTDX',
      'azureTDX',
    ])
    // every field of the CVM sections says what it is
    for (const key of ['awsSEVSNP', 'qemuTDX']) {
      const section = attestation[key] as { properties: Record<string, { description?: string }> }
      for (const [field, s] of Object.entries(section.properties))
        expect(s.description, `${key}.${field}`).to.be.a('string').and.not.equal('')
    }
  })

  it('a usage error exits 2', async () => {
    const res = await runCli(['config', 'generate', 'openstack', '-C', ws.dir])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain('Expected openstack to be one of: aws, gcp, azure, qemu')
  })
})

describe('constellation config init-secret-hash', () => {
  it("prints a bcrypt hash of the state's init secret, never the secret", async () => {
    const ws = await makeTempDir()
    try {
      await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
      const res = await runCli(['config', 'init-secret-hash', '-C', ws.dir, '--json'])
      expect(res.code, res.stderr).to.equal(0)
      const { initSecretHash } = JSON.parse(res.stdout) as { initSecretHash: string }
      const secretHex = (await readInitSecret(ws.dir)).toString('hex')
      const bcrypt = (await import('bcryptjs')).default
      expect(await bcrypt.compare(Buffer.from(secretHex, 'hex').toString('latin1'), initSecretHash)).to.equal(
        true,
      )
      expect(res.stdout + res.stderr).to.not.contain(secretHex)
      expect(res.stdout + res.stderr).to.not.contain(Buffer.from(secretHex, 'hex').toString('latin1'))
    } finally {
      await ws.cleanup()
    }
  })
})
