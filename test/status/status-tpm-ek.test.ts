/**
 * `constellation status` (built CLI) on a tpm-ek workspace: verification services on swtpms
 * manufactured with EK certificates (a local CA each), the Kubernetes API contract fake (TEST
 * DOUBLE) listing the Nodes. Each node counts only when its EK chains to a configured root and its
 * TPM activated a credential; dropping one manufacturer's root makes that node untrusted.
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import { extendPcr } from '../../src/lib/tpm/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { ownLoopback } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { startVerifyServiceOn, type VerifyServiceProcess } from '../verify/verify-service-process.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()

interface StatusJson {
  healthy: boolean
  nodes: Array<{ name: string; attestation: string; clusterIdPcr: string; reason?: string }>
  attestation?: { variant: string; anchored: boolean }
}

describe('constellation status on a tpm-ek workspace (built CLI; swtpms with EK certificates, API fake)', function () {
  this.timeout(120_000)
  const clusterId = randomBytes(32)
  let ws: TempDir
  let api: FakeApiServer
  let tpms: SwtpmHandle[]
  let services: VerifyServiceProcess[]

  beforeEach(async () => {
    ;[ws, api, ...tpms] = await Promise.all([
      makeTempDir('constell-status-tpm-ek-'),
      startFakeApiServer(),
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
    ])
    services = []
  })
  afterEach(async () => {
    await Promise.all(services.map((s) => s.stop()))
    await Promise.all(tpms.map((t) => t.stop()))
    await api.stop()
    await ws.cleanup()
  })

  it('trusts nodes of the configured manufacturers only; the others are untrusted, naming the EK chain', async () => {
    const gen = await runCli(['config', 'generate', 'qemu', '-a', 'tpm-ek', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    const [cpCa, workerCa] = tpms.map((t) => t.ekCa!.intermediate)
    await writeFile(path.join(ws.dir, 'cp-vendor.pem'), cpCa!)
    await writeFile(path.join(ws.dir, 'worker-vendor.pem'), workerCa!)
    const configFile = path.join(ws.dir, 'constellation-conf.yaml')
    const config = await readFile(configFile, 'utf8')
    const withRoots = (roots: string[]) =>
      writeFile(configFile, config.replace('roots: []', `roots: [${roots.join(', ')}]`))
    const stateFile = path.join(ws.dir, 'constellation-state.yaml')
    const state = await readFile(stateFile, 'utf8')
    await writeFile(stateFile, state.replace(/clusterID: .*/, `clusterID: ${clusterId.toString('hex')}`))
    await writeFile(path.join(ws.dir, 'constellation-admin.conf'), api.kubeconfig(), { mode: 0o600 })

    const addresses: string[] = []
    for (const tpm of tpms) {
      await extendPcr(tpm.open, 15, sha256(clusterId))
      let address = ''
      services.push(
        await startVerifyServiceOn(tpm, ws.dir, async () => `${(address = ownLoopback())}:30081`, 'tpm-ek'),
      )
      addresses.push(address)
    }
    for (const [i, name] of ['cp-0', 'worker-0'].entries())
      api.put('v1', 'nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, labels: i === 0 ? { 'node-role.kubernetes.io/control-plane': '' } : {} },
        status: {
          addresses: [{ type: 'InternalIP', address: addresses[i] }],
          conditions: [{ type: 'Ready', status: 'True' }],
          nodeInfo: { kubeletVersion: 'v1.31.13' },
        },
      })
    const status = () =>
      runCli(['status', '-C', ws.dir, '--timeout', '10s', '--json'], { env: { PATH: '/usr/bin:/bin' } })

    await withRoots(['cp-vendor.pem', 'worker-vendor.pem'])
    const healthy = await status()
    expect(healthy.code, healthy.stdout + healthy.stderr).to.equal(0)
    const both = JSON.parse(healthy.stdout) as StatusJson
    expect(both.healthy).to.equal(true)
    expect(both.attestation).to.include({ variant: 'tpm-ek', anchored: true })
    expect(both.nodes.map((n) => [n.name, n.attestation, n.clusterIdPcr])).to.deep.equal([
      ['cp-0', 'trusted', 'match'],
      ['worker-0', 'trusted', 'match'],
    ])
    for (const service of services) expect(service.logs()).to.include('Credential activated')

    await withRoots(['cp-vendor.pem'])
    const one = await status()
    expect(one.code).to.equal(1)
    const report = JSON.parse(one.stdout) as StatusJson
    expect(report.healthy).to.equal(false)
    expect(report.nodes.map((n) => [n.name, n.attestation])).to.deep.equal([
      ['cp-0', 'trusted'],
      ['worker-0', 'untrusted'],
    ])
    expect(report.nodes[1]?.reason).to.match(
      /EK certificate chain: EndorsementKeyCertificates\[0\] .* chains to none of the 1 configured manufacturer roots/,
    )
  })
})
