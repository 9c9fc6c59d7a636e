/**
 * `constellation verify` and `config measurements` on a tpm-ek workspace (built CLI) against
 * `constellation verifyservice` on swtpms manufactured by swtpm_setup --create-ek-cert, each with a
 * local CA of its own: the workspace trusts the first TPM's CA only. The node counts once its EK
 * certificate chains to that root and its TPM activated a credential for the AK that quoted.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { startVerifyServiceOn, type VerifyServiceProcess } from './verify-service-process.js'

describe('constellation verify on a tpm-ek workspace (verifyservice on swtpm with EK certificates)', function () {
  this.timeout(120_000)
  let trusted: SwtpmHandle
  let stranger: SwtpmHandle
  let ws: TempDir
  let services: VerifyServiceProcess[]
  let node: VerifyServiceProcess
  let otherNode: VerifyServiceProcess

  before(async () => {
    ;[trusted, stranger] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
    ])
  })
  after(async () => Promise.all([trusted?.stop(), stranger?.stop()]))

  beforeEach(async () => {
    ws = await makeTempDir('constell-verify-tpm-ek-')
    const gen = await runCli(['config', 'generate', 'qemu', '-a', 'tpm-ek', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    // the manufacturer root as a file next to the config (these TPMs carry no intermediate in NV)
    await writeFile(path.join(ws.dir, 'manufacturer.pem'), trusted.ekCa!.intermediate)
    const config = path.join(ws.dir, 'constellation-conf.yaml')
    const text = await readFile(config, 'utf8')
    expect(text).to.include('roots: []')
    await writeFile(config, text.replace('roots: []', 'roots: [manufacturer.pem]'))
    const listen = async () => `127.0.0.1:${await freePort()}`
    services = [
      (node = await startVerifyServiceOn(trusted, ws.dir, listen, 'tpm-ek')),
      (otherNode = await startVerifyServiceOn(stranger, ws.dir, listen, 'tpm-ek')),
    ]
  })
  afterEach(async () => {
    const codes = await Promise.all(services.map((s) => s.stop()))
    await ws.cleanup()
    expect(
      codes.every((c) => c === 0),
      'verifyservice stops cleanly on SIGTERM',
    ).to.equal(true)
  })

  const verify = (endpoint: string, ...extra: string[]) =>
    runCli(['verify', '-C', ws.dir, '--node-endpoint', endpoint, ...extra])

  it('trusts the node whose EK chains to the root, after its TPM activated a credential; --json says so', async () => {
    const ok = await verify(node.endpoint)
    expect(ok.code, ok.stderr).to.equal(0)
    expect(ok.stdout).to.include(
      `Node ${node.endpoint} (tpm-ek) is trusted: every enforced measurement matches, its EK certificate chains to the configured roots, and its TPM activated a credential for the AK that quoted.`,
    )
    expect(node.logs()).to.include('Credential activated for an attesting client')
    expect(ok.stdout).to.match(/^tpm-ek is anchored: it proves .*manufacturer root/m)

    const json = await verify(node.endpoint, '--json')
    expect(json.code, json.stderr).to.equal(0)
    const report = JSON.parse(json.stdout) as {
      variant: string
      trusted: boolean
      activation?: { akName: string; activated: boolean }
      attestation?: { variant: string; anchored: boolean }
    }
    expect(report).to.include({ variant: 'tpm-ek', trusted: true })
    expect(report.attestation).to.include({ variant: 'tpm-ek', anchored: true })
    expect(report.activation?.activated).to.equal(true)
    // nameAlg SHA-256 (000b) || SHA-256 of the AK's public area
    expect(report.activation?.akName).to.match(/^000b[0-9a-f]{64}$/)
  })

  it('refuses (exit 4) a node whose TPM another CA manufactured, naming the EK chain, before any activation', async () => {
    const res = await verify(otherNode.endpoint)
    expect(res.code, res.stdout + res.stderr).to.equal(4)
    expect(res.stderr).to.match(
      /EK certificate chain: EndorsementKeyCertificates\[0\] .* chains to none of the 1 configured manufacturer roots/,
    )
    expect(otherNode.logs()).to.not.include('Credential activated')
  })

  it('refuses a tpm-ek workspace without roots before dialling, and a qemu-vtpm node (another OID)', async () => {
    const config = path.join(ws.dir, 'constellation-conf.yaml')
    const text = await readFile(config, 'utf8')
    await writeFile(config, text.replace('roots: [manufacturer.pem]', 'roots: []'))
    const none = await verify(node.endpoint)
    expect(none.code).to.equal(1)
    expect(none.stderr).to.match(
      /tpm-ek attestation needs manufacturer root certificates; none are configured/,
    )

    await writeFile(config, text)
    const qemu = await startVerifyServiceOn(
      trusted,
      ws.dir,
      async () => `127.0.0.1:${await freePort()}`,
      'qemu-vtpm',
    )
    services.push(qemu)
    const res = await verify(qemu.endpoint)
    expect(res.code).to.equal(4)
    expect(res.stderr).to.match(/no attestation extension for 1\.3\.9900\.5\.100 \(tpm-ek\)/)
  })

  it('config measurements reads the golden node with the workspace variant and roots', async () => {
    const res = await runCli([
      'config',
      'measurements',
      '-C',
      ws.dir,
      '--node-endpoint',
      node.endpoint,
      '--yes',
      '--json',
    ])
    expect(res.code, res.stderr).to.equal(0)
    expect(JSON.parse(res.stdout)).to.include({ variant: 'tpm-ek' })
    expect(node.logs()).to.include('Credential activated for an attesting client')
    const refused = await runCli([
      'config',
      'measurements',
      '-C',
      ws.dir,
      '--node-endpoint',
      otherNode.endpoint,
      '--yes',
    ])
    expect(refused.code).to.not.equal(0)
    expect(refused.stderr).to.match(/EK certificate chain/)
  })
})
