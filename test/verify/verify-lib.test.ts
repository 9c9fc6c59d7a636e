import { createHash } from 'node:crypto'
import { expect } from '../support/chai.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { parseNodeConfig } from '../../src/lib/nodeconfig/node-config.js'
import { createLogger } from '../../src/lib/system/index.js'
import { extendPcr, readPcrs } from '../../src/lib/tpm/index.js'
import { type Measurements } from '../../src/lib/attestation/index.js'
import { ExitCode } from '../../src/lib/errors/index.js'
import { renderVerifyReport, verifyNode, type VerifyServiceDaemon } from '../../src/lib/verify/index.js'
import { createVerifyService } from '../../src/wiring/verify-service.js'
import { expectedMeasurements } from '../../src/lib/verify/operator.js'

describe('verify service daemon and verifyNode', function () {
  let tpm: SwtpmHandle
  let daemon: VerifyServiceDaemon
  let endpoint: string
  const logs: string[] = []
  beforeEach(async () => {
    tpm = await startSwtpm()
    const port = await freePort()
    const config = parseNodeConfig(
      `attestationVariant: qemu-vtpm\ntpm: {swtpm: "${tpm.endpoint}"}\nverifyService: {listen: "127.0.0.1:${port}"}\n`,
      'node.yaml',
    )
    daemon = createVerifyService(config, createLogger({ format: 'json', write: (l) => logs.push(l) }))
    endpoint = await daemon.start()
  })
  afterEach(async () => {
    await daemon.stop(1000)
    await tpm.stop()
  })
  const measured = async (): Promise<Measurements> => {
    const pcrs = await readPcrs(tpm.open, [4, 9, 15])
    return new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
  }

  it('reports a trusted node with every PCR and the checked ones marked', async () => {
    const { report, error } = await verifyNode({
      endpoint,
      variant: 'qemu-vtpm',
      measurements: await measured(),
    })
    expect(error).to.equal(undefined)
    expect(report?.trusted).to.be.true
    expect(report?.pcrs).to.have.length(24)
    expect(report?.pcrs.filter((p) => p.status === 'ok').map((p) => p.index)).to.deep.equal([4, 9, 15])
    expect(renderVerifyReport(report!)).to.include('is trusted')
  })

  it('refuses a changed PCR with exit code 4 and still shows the quoted values; warn-only stays trusted', async () => {
    const m = await measured()
    await extendPcr(tpm.open, 4, createHash('sha256').update('x').digest())
    const refused = await verifyNode({ endpoint, variant: 'qemu-vtpm', measurements: m })
    expect(refused.error?.exitCode).to.equal(ExitCode.AttestationFailed)
    expect(refused.error?.message).to.match(/untrusted measurement value [0-9a-f]{64} at index 4/)
    expect(refused.report?.trusted).to.be.false
    expect(refused.report?.pcrs.find((p) => p.index === 4)?.status).to.equal('mismatch')
    m.set(4, { expected: m.get(4)!.expected, warnOnly: true })
    const warned = await verifyNode({ endpoint, variant: 'qemu-vtpm', measurements: m })
    expect(warned.report?.trusted).to.be.true
    expect(warned.report?.warnings[0]).to.match(/^Encountered untrusted measurement value .* at index 4$/)
  })

  it('stop is idempotent and a stopped service is unreachable (exit code 3)', async () => {
    const first = daemon.stop(1000)
    expect(daemon.stop(1000)).to.equal(first)
    await first
    const { error } = await verifyNode({
      endpoint,
      variant: 'qemu-vtpm',
      measurements: new Map([[15, { expected: Buffer.alloc(32), warnOnly: false }]]),
      timeoutMs: 3000,
    })
    expect(error?.exitCode).to.equal(ExitCode.Unreachable)
    expect(logs.some((l) => l.includes('Verification service stopped'))).to.be.true
  })

  it('refuses to verify against no measurements at all (it would trust any node)', async () => {
    await expect(verifyNode({ endpoint, variant: 'qemu-vtpm', measurements: new Map() })).to.be.rejectedWith(
      /refusing to trust any node/,
    )
  })

  it('expectedMeasurements pins PCR 15 to the cluster ID and refuses non-hex IDs', () => {
    const m = expectedMeasurements(new Map(), '00ff')
    expect(m.get(15)?.warnOnly).to.equal(false)
    expect(() => expectedMeasurements(new Map(), 'zz')).to.throw(/--cluster-id "zz" is not hex/)
  })
})
