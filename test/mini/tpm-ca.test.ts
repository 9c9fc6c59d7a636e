/**
 * tpm-ek in `mini`: the cluster's local CA and its TPMs' manufacturing (swtpm_setup with
 * swtpm_localca, Debian's swtpm-tools), seen through a spy runner and for real; and the node config
 * that names the CA's issuing certificate as the join services' root.
 */
import { X509Certificate } from 'node:crypto'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { miniPaths } from '../../src/lib/mini/layout.js'
import { miniNetwork } from '../../src/lib/mini/network.js'
import { miniAttestation, miniNodeConfig } from '../../src/lib/mini/node-boot.js'
import { createLocalCa, localCaFiles, manufactureTpm, writeLocalCaConfig } from '../../src/lib/mini/tpm-ca.js'
import { CliError } from '../../src/lib/errors/index.js'
import { parseNodeConfig } from '../../src/lib/nodeconfig/node-config.js'
import { CommandFailedError, createRunner, type Runner } from '../../src/lib/system/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { readCertificateView } from '../../src/lib/x509/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { testCertificate } from '../support/test-ca.js'

describe('mini tpm-ek: the cluster CA and its TPMs', function () {
  this.timeout(30_000)
  let dir: TempDir
  beforeEach(async () => (dir = await makeTempDir('constell-mini-ca-')))
  afterEach(() => dir.cleanup())

  it('configures swtpm_localca in the CA folder and runs swtpm_setup with it through the runner', async () => {
    const ca = localCaFiles(path.join(dir.dir, 'tpm-ca'))
    await writeLocalCaConfig(ca)
    expect((await stat(ca.dir)).mode & 0o777).to.equal(0o700)
    expect(await readFile(ca.localcaConfig, 'utf8')).to.equal(
      [
        `statedir = ${ca.dir}`,
        `signingkey = ${ca.dir}/signkey.pem`,
        `issuercert = ${ca.dir}/issuercert.pem`,
        `certserial = ${ca.dir}/certserial`,
        '',
      ].join('\n'),
    )
    expect(await readFile(ca.setupConfig, 'utf8')).to.equal(
      `create_certs_tool = /usr/bin/swtpm_localca\ncreate_certs_tool_config = ${ca.localcaConfig}\nactive_pcr_banks = sha256\n`,
    )
    const calls: Array<{ file: string; args: readonly string[] }> = []
    const spy: Runner = {
      run: (file, args) => (calls.push({ file, args }), Promise.resolve({ stdout: '', stderr: '' })),
    }
    const state = path.join(dir.dir, 'nodes', 'worker-0', 'tpm')
    await manufactureTpm(spy, state, ca)
    expect(calls).to.deep.equal([
      {
        file: 'swtpm_setup',
        args: ['--tpm2', '--tpmstate', state, '--create-ek-cert', '--config', ca.setupConfig, '--overwrite'],
      },
    ])
    expect((await stat(state)).mode & 0o777, 'the TPM state folder exists before swtpm_setup').to.equal(0o700)

    const failing: Runner = {
      run: (file, args) =>
        Promise.reject(
          new CommandFailedError({
            command: file,
            args,
            exitCode: 1,
            stdout: '',
            stderr: 'swtpm_localca: Need read rights on signing key',
            timedOut: false,
          }),
        ),
    }
    const err = await manufactureTpm(failing, state, ca).then(
      () => expect.fail('manufactured'),
      (e: unknown) => e,
    )
    expect(err).to.be.instanceOf(CliError)
    expect((err as CliError).message).to.match(
      new RegExp(
        `^manufacturing the TPM in ${state} with EK certificates: .*Need read rights on signing key`,
      ),
    )
    expect((err as CliError).hint).to.match(/swtpm-tools/)
  })

  it('for real: manufacturing the first TPM makes the CA, the next TPM keeps it (the chain: test/e2e/mini.test.ts)', async () => {
    const ca = localCaFiles(path.join(dir.dir, 'tpm-ca'))
    await writeLocalCaConfig(ca)
    const runner = createRunner()
    await manufactureTpm(runner, path.join(dir.dir, 'a'), ca)
    const issuer = await readFile(ca.issuerCert, 'utf8')
    await manufactureTpm(runner, path.join(dir.dir, 'b'), ca)
    expect(await readFile(ca.issuerCert, 'utf8'), 'one CA for the cluster').to.equal(issuer)
    const cert = new X509Certificate(issuer)
    expect(cert.ca).to.equal(true)
    expect(cert.checkIssued(new X509Certificate(await readFile(ca.rootCert)))).to.equal(true)
    for (const tpm of ['a', 'b'])
      expect((await stat(path.join(dir.dir, tpm, 'tpm2-00.permall'))).isFile(), tpm).to.equal(true)
  })

  it('for real: with the CA made first, TPMs are manufactured at once and keep its issuing certificate', async () => {
    const ca = localCaFiles(path.join(dir.dir, 'tpm-ca'))
    await writeLocalCaConfig(ca)
    const now = new Date('2026-11-28T00:00:00Z')
    await createLocalCa(ca, now)
    const issuer = await readFile(ca.issuerCert, 'utf8')
    const cert = new X509Certificate(issuer)
    expect(cert.ca).to.equal(true)
    expect(cert.checkIssued(cert) && cert.verify(cert.publicKey), 'self-signed').to.equal(true)
    // basicConstraints CA and keyUsage (keyCertSign), both critical; a key identifier
    expect(readCertificateView(cert.raw).extensions.map((e) => [e.oid, e.critical])).to.deep.equal([
      ['2.5.29.19', true],
      ['2.5.29.15', true],
      ['2.5.29.14', false],
    ])
    expect(new Date(cert.validFrom).getTime()).to.equal(now.getTime() - 3600_000)
    expect(cert.validTo).to.equal('Dec 31 23:59:59 9999 GMT')
    expect((await stat(ca.signingKey)).mode & 0o777, 'the signing key is 0600').to.equal(0o600)

    const runner = createRunner()
    await Promise.all(['a', 'b', 'c'].map((tpm) => manufactureTpm(runner, path.join(dir.dir, tpm), ca)))
    for (const tpm of ['a', 'b', 'c'])
      expect((await stat(path.join(dir.dir, tpm, 'tpm2-00.permall'))).isFile(), tpm).to.equal(true)
    expect(await readFile(ca.issuerCert, 'utf8'), 'swtpm_localca used the CA it found').to.equal(issuer)
    expect(await stat(ca.rootCert).catch(() => undefined), 'and made no root of its own').to.equal(undefined)
    // a second call leaves a CA that is there as it is (the TPMs above were issued by it)
    await createLocalCa(ca)
    expect(await readFile(ca.issuerCert, 'utf8')).to.equal(issuer)
  })

  it('node configs name the variant, and for tpm-ek the CA issuing certificate as the one root', async () => {
    const paths = miniPaths(dir.dir)
    const network = miniNetwork({ mode: 'loopback', id: 'abc123', prefix: '127.9.9' }, createRunner())
    const node = { name: 'control-plane-0', role: 'control-plane' as const, index: 0, address: '127.9.9.2' }
    const files = paths.node(node.name)
    const qemu = miniNodeConfig(network, node, files, miniAttestation('qemu-vtpm', paths))
    expect(qemu.attestationVariant).to.equal('qemu-vtpm')
    expect(qemu.attestation).to.equal(undefined)
    const tpmEk = miniNodeConfig(network, node, files, miniAttestation('tpm-ek', paths))
    expect(tpmEk.attestationVariant).to.equal('tpm-ek')
    expect(tpmEk.attestation).to.deep.equal({
      tpmEK: { roots: [path.join(dir.dir, 'constellation-mini', 'tpm-ca', 'issuercert.pem')] },
    })
    const section = { amdRootKey: '/the/stand-in/root.pem', bootloaderVersion: 3 }
    const snp = miniNodeConfig(network, node, files, miniAttestation('gcp-sev-snp', paths, section))
    expect(snp.attestationVariant).to.equal('gcp-sev-snp')
    expect(snp.attestation).to.deep.equal({ gcpSEVSNP: section })
    expect(() => miniAttestation('azure-tdx', paths)).to.throw(/mini cannot run azure-tdx: Azure's CVMs read/)
    // a valid node config once the CA exists (its roots are read as the config is)
    const text = stringifyYaml(tpmEk)
    expect(() => parseNodeConfig(text, files.config)).to.throw(/issuercert\.pem/)
    await mkdir(paths.tpmCa.dir, { recursive: true })
    await writeFile(paths.tpmCa.issuerCert, testCertificate({ cn: 'swtpm-localca', ca: true }).pem)
    expect(parseNodeConfig(text, files.config).attestation).to.deep.equal(tpmEk.attestation)
  })
})
