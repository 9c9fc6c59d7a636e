import { createHash, randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { freePort, ownLoopback } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { startSilentPeer } from '../support/silent-peer.js'
import { startSynDropPeer } from '../support/syn-drop-peer.js'
import { startVerifyServiceOn, type VerifyServiceProcess } from './verify-service-process.js'
import { extendPcr } from '../../src/lib/tpm/index.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()

describe('constellation verify against constellation verifyservice on swtpm', function () {
  this.timeout(120_000)
  let tpm: SwtpmHandle
  let ws: { dir: string; cleanup: () => Promise<void> }
  let service: VerifyServiceProcess

  beforeEach(async () => {
    tpm = await startSwtpm()
    ws = await makeTempDir()
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
    service = await startVerifyServiceOn(tpm, ws.dir, async () => `127.0.0.1:${await freePort()}`)
  })
  afterEach(async () => {
    const code = await service?.stop()
    await tpm.stop()
    await ws.cleanup()
    expect(code, 'verifyservice stops cleanly on SIGTERM').to.equal(0)
    expect(service.logs()).to.include('Verification service stopped')
  })

  const verify = (...extra: string[]) =>
    runCli(['verify', '-C', ws.dir, '--node-endpoint', service.endpoint, ...extra])

  it('exits 0 when the measurements equal the PCRs, then 4 naming the index after an enforced PCR changed', async () => {
    const ok = await verify()
    expect(ok.code, ok.stderr).to.equal(0)
    expect(ok.stdout).to.match(/^PCR\s+VALUE\s+EXPECTATION\s+STATUS/m)
    expect(ok.stdout).to.match(/^9\s+0{64}\s+enforced\s+ok$/m)
    expect(ok.stdout).to.include('is trusted')
    // qemu-vtpm takes the attestation key as presented: the verdict says how little that proves
    expect(ok.stdout).to.match(/^qemu-vtpm is NOT anchored: it proves .*any TPM or program/m)

    await extendPcr(tpm.open, 9, sha256(Buffer.from('another kernel')))
    const bad = await verify()
    expect(bad.code).to.equal(4)
    expect(bad.stderr).to.match(/untrusted measurement value [0-9a-f]{64} at index 9/)
    expect(bad.stdout).to.match(/^9\s+[0-9a-f]{64}\s+enforced\s+mismatch$/m)
    expect(bad.stdout).to.include('NOT trusted')
  })

  it('with --cluster-id exits 0 once PCR 15 was extended with SHA256(clusterID), and --json reports it', async () => {
    const clusterId = randomBytes(32)
    await extendPcr(tpm.open, 15, sha256(clusterId))
    const withoutId = await verify()
    expect(withoutId.code).to.equal(4)
    expect(withoutId.stderr).to.match(/at index 15/)
    expect(withoutId.stderr).to.include('the node was initialized and belongs to a cluster')
    expect(withoutId.stderr).to.not.match(/image/)
    const other = await verify('--cluster-id', randomBytes(32).toString('hex'))
    expect(other.code).to.equal(4)
    const res = await verify('--cluster-id', clusterId.toString('hex'), '--json')
    expect(res.code, res.stderr).to.equal(0)
    const report = JSON.parse(res.stdout) as {
      trusted: boolean
      pcrs: Array<{ index: number; status: string }>
      attestation?: { variant: string; anchored: boolean; proves: string }
    }
    expect(report.trusted).to.be.true
    expect(report.attestation).to.include({ variant: 'qemu-vtpm', anchored: false })
    expect(report.attestation?.proves).to.match(/PCR values/)
    expect(report.pcrs.find((p) => p.index === 15)?.status).to.equal('ok')
    expect(report.pcrs).to.have.length(24)
  })

  it('exits 3 when nothing listens at the endpoint, 2 for a bad --cluster-id', async () => {
    const closed = await runCli(['verify', '-C', ws.dir, '--node-endpoint', '127.0.0.1:1'])
    expect(closed.code).to.equal(3)
    expect(closed.stderr).to.include('node 127.0.0.1:1 is not reachable: connect ECONNREFUSED 127.0.0.1:1\n')
    const badId = await verify('--cluster-id', 'xyz')
    expect(badId.code).to.equal(2)
    expect(badId.stderr).to.include('--cluster-id')
  })
})

describe('constellation verify as the README documents it: node and cluster ID from the workspace', function () {
  this.timeout(120_000)
  let tpm: SwtpmHandle
  let ws: { dir: string; cleanup: () => Promise<void> }
  let host: string
  let services: VerifyServiceProcess[]
  const clusterId = randomBytes(32)

  /** The workspace of an initialized cluster whose first node is `host` (init port in the endpoint). */
  const writeState = async (id: Buffer) => {
    const file = path.join(ws.dir, 'constellation-state.yaml')
    const state = await readFile(file, 'utf8')
    await writeFile(file, state.replace(/clusterID: .*/, `clusterID: ${id.toString('hex')}`))
  }

  beforeEach(async () => {
    tpm = await startSwtpm()
    ws = await makeTempDir()
    services = []
    services.push(await startVerifyServiceOn(tpm, ws.dir, async () => `${(host = ownLoopback())}:30081`))
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, '--endpoint', `${host}:9000`])
    expect(gen.code, gen.stderr).to.equal(0)
    await writeState(clusterId)
  })
  afterEach(async () => {
    const codes = await Promise.all(services.map((s) => s.stop()))
    await tpm.stop()
    await ws.cleanup()
    expect(
      codes.every((c) => c === 0),
      'verifyservice stops cleanly on SIGTERM',
    ).to.be.true
  })

  it('`verify -C ws` dials the state endpoint host on 30081 and checks PCR 15 against the state cluster ID', async () => {
    await extendPcr(tpm.open, 15, sha256(clusterId))
    const res = await runCli(['verify', '-C', ws.dir])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.include(`Cluster ID from ${path.join(ws.dir, 'constellation-state.yaml')}`)
    expect(res.stdout).to.match(/^15\s+[0-9a-f]{64}\s+enforced\s+ok$/m)
    expect(res.stdout).to.include(`Node ${host}:30081 (qemu-vtpm) is trusted`)
  })

  it('-e HOST gets port 30081; -e [::1]:PORT reaches an IPv6 service', async () => {
    await extendPcr(tpm.open, 15, sha256(clusterId))
    const bare = await runCli(['verify', '-C', ws.dir, '-e', host])
    expect(bare.code, bare.stderr).to.equal(0)
    expect(bare.stdout).to.include(`Node ${host}:30081`)
    const v6 = await startVerifyServiceOn(tpm, ws.dir, async () => `[::1]:${await freePort()}`)
    services.push(v6)
    const port = v6.endpoint.replace(/^.*:/, '')
    const res = await runCli(['verify', '-C', ws.dir, '-e', `[::1]:${port}`, '--json'])
    expect(res.code, res.stderr).to.equal(0)
    expect((JSON.parse(res.stdout) as { endpoint: string }).endpoint).to.equal(`[::1]:${port}`)
    const bad = await runCli(['verify', '-C', ws.dir, '-e', '::1]:x'])
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.include('--node-endpoint "::1]:x" is not HOST, HOST:PORT or [IPv6]:PORT')
  })

  it('says the node belongs to another cluster (or none), and --json carries the PCR table with the error', async () => {
    const never = await runCli(['verify', '-C', ws.dir, '--json'])
    expect(never.code).to.equal(4)
    const zero = JSON.parse(never.stdout) as {
      trusted: boolean
      pcrs: Array<{ index: number; status: string; value: string }>
      error: { message: string; exitCode: number }
    }
    expect(zero.trusted).to.be.false
    expect(zero.pcrs).to.have.length(24)
    expect(zero.pcrs.find((p) => p.index === 15)).to.include({ status: 'mismatch', value: '00'.repeat(32) })
    expect(zero.error.exitCode).to.equal(4)
    expect(zero.error.message).to.include('the node was never initialized and belongs to no cluster')

    await extendPcr(tpm.open, 15, sha256(randomBytes(32)))
    const other = await runCli(['verify', '-C', ws.dir])
    expect(other.code).to.equal(4)
    expect(other.stderr).to.include('the node belongs to another cluster')
    expect(other.stderr).to.not.match(/image/)
    expect(
      other.stderr.split('measurement validation failed'),
      'said once, not again by the cause',
    ).to.have.length(2)
    expect(other.stdout).to.match(/^15\s+[0-9a-f]{64}\s+enforced\s+mismatch$/m)
  })

  it('without --node-endpoint and without an endpoint in the state it is a usage error', async () => {
    const empty = await makeTempDir()
    try {
      const gen = await runCli(['config', 'generate', 'qemu', '-C', empty.dir])
      expect(gen.code, gen.stderr).to.equal(0)
      const file = path.join(empty.dir, 'constellation-state.yaml')
      await rm(file)
      const res = await runCli(['verify', '-C', empty.dir])
      expect(res.code).to.equal(2)
      expect(res.stderr).to.include('--node-endpoint not given and there is no')
    } finally {
      await empty.cleanup()
    }
  })
})

describe('constellation verify against a peer that accepts and never speaks', function () {
  this.timeout(120_000)
  it('gives up after --timeout, closes the connection and exits 3 on its own', async () => {
    const ws = await makeTempDir()
    const peer = await startSilentPeer()
    try {
      const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
      expect(gen.code, gen.stderr).to.equal(0)
      // runCli kills a child still running after 60 s (code null): only exiting by itself passes
      const res = await runCli(['verify', '-C', ws.dir, '-e', `127.0.0.1:${peer.port}`, '--timeout', '1s'])
      expect(res.code, res.stderr).to.equal(3)
      expect(res.stderr).to.include(`node 127.0.0.1:${peer.port} is not reachable`)
      await peer.firstClosed
      const bad = await runCli(['verify', '-C', ws.dir, '-e', '127.0.0.1', '--timeout', 'soon'])
      expect(bad.code).to.equal(2)
      expect(bad.stderr).to.include('--timeout "soon" is not a duration')
    } finally {
      await peer.stop()
      await ws.cleanup()
    }
  })
})

describe('constellation verify against a host that never completes the TCP handshake', function () {
  this.timeout(120_000)
  it('exits 3 after --timeout, not when the kernel gives up on the connect minutes later', async () => {
    const ws = await makeTempDir()
    const peer = await startSynDropPeer()
    try {
      const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
      expect(gen.code, gen.stderr).to.equal(0)
      // runCli kills a child still running after 60 s (code null); the kernel's SYN retries last ~2 min
      const res = await runCli(['verify', '-C', ws.dir, '-e', `127.0.0.1:${peer.port}`, '--timeout', '1s'])
      expect(res.code, res.stderr).to.equal(3)
      expect(res.stderr).to.include(`node 127.0.0.1:${peer.port} is not reachable: no answer within 1s\n`)
      expect(res.stderr, 'grpc-js bookkeeping stays out of the message').not.to.match(
        /DEADLINE_EXCEEDED|LB pick/,
      )
    } finally {
      await peer.stop()
      await ws.cleanup()
    }
  })
})

describe('constellation verifyservice without a TPM', function () {
  this.timeout(60_000)
  it('fails at start (exit 1, naming the TPM) instead of listening without being able to attest', async () => {
    const ws = await makeTempDir()
    try {
      const port = await freePort()
      const config = path.join(ws.dir, 'node-config.yaml')
      await writeFile(
        config,
        `attestationVariant: qemu-vtpm\ntpm:\n  swtpm: "127.0.0.1:${port}"\nverifyService:\n  listen: "127.0.0.1:${await freePort()}"\n`,
      )
      const res = await runCli(['verifyservice', '--config', config])
      expect(res.code, res.stderr).to.equal(1)
      expect(res.stderr).to.include(`connecting to swtpm at 127.0.0.1:${port}`)
      expect(res.stderr).to.not.include('Verification service listening')
    } finally {
      await ws.cleanup()
    }
  })
})
