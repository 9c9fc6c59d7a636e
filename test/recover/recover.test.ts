/**
 * `constellation recover` (the CLI process) against a node's RecoveryServer on real parts: the
 * node's swtpm behind server-attested aTLS on loopback, the workspace's measurements, the master
 * secret file. The node's check of the secret is a spy here (the e2e node-lifecycle test has the
 * real disk behind it).
 */
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import * as grpc from '@grpc/grpc-js'
import { APIClient } from '../../src/gen/recover.js'
import {
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
} from '../../src/lib/atls/index.js'
import { attestationAssurance, createIssuer } from '../../src/lib/attestation/index.js'
import { loadConfig, validatorForConfig } from '../../src/lib/config/index.js'
import { clusterKmsUri, writeMasterSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { RecoveryRefusedError, RecoveryServer } from '../../src/lib/statedisk/index.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { runCliOnTerminal } from '../support/terminal.js'
import { expectPcr4, setClusterEndpoint, startLocalNode, type LocalNode } from '../support/local-node.js'
import { freePort } from '../support/ports.js'

const MASTER = { key: randomBytes(32), salt: randomBytes(32) }

describe('constellation recover (CLI process) and the node recovery endpoint (aTLS, swtpm)', function () {
  this.timeout(60_000)
  let node: LocalNode
  let server: RecoveryServer | undefined
  let offered: Array<{ key: Buffer; salt: Buffer }>
  let lines: string[]
  let endpoint: string

  beforeEach(async () => {
    node = await startLocalNode()
    offered = []
    lines = []
    await writeMasterSecret(workspacePaths(node.workspace).masterSecret, MASTER)
  })
  afterEach(async () => {
    await server?.stop(100)
    server = undefined
    await node.stop()
  })

  /** The node's side: opens only with MASTER (as the real node's disk would). */
  async function serve(): Promise<void> {
    server = new RecoveryServer({
      listen: '127.0.0.1:0',
      credentials: createAttestedServerCredentials({ issuer: createIssuer('qemu-vtpm', node.swtpm.open) }),
      recover: (master) => {
        offered.push(master)
        if (!master.key.equals(MASTER.key))
          throw new RecoveryRefusedError("the master secret does not open this node's state disk")
        return Promise.resolve()
      },
      log: createLogger({ format: 'json', write: (l) => lines.push(l) }),
    })
    endpoint = await server.start()
  }
  // the workspace is qemu-vtpm: recover sends the master secret only when told to (--yes)
  const recover = (...args: string[]) =>
    runCli(['recover', '-C', node.workspace, '--endpoint', endpoint, '--yes', ...args])

  it('sends the master secret to an attested node, once; the node recovers and later calls are told so', async () => {
    await serve()
    const ok = await recover('--json')
    expect(ok.code, ok.stderr).to.equal(0)
    const result = JSON.parse(ok.stdout) as { attestation: { anchored: boolean } }
    expect(result).to.deep.include({ endpoint, recovered: true })
    expect(result.attestation).to.include({ variant: 'qemu-vtpm', anchored: false })
    expect(offered).to.deep.equal([MASTER])
    const again = await recover()
    expect(again.code).to.equal(1)
    expect(again.stderr).to.include('has nothing to recover: this node recovered already')
    expect(offered).to.have.length(1)
    const log = lines.join('\n')
    for (const secret of [MASTER.key, MASTER.salt])
      for (const enc of ['base64', 'base64url', 'hex'] as const)
        expect(log).not.to.include(secret.toString(enc))
    expect(
      lines
        .filter((l) => l.includes('Recovery request'))
        .map((l) => (JSON.parse(l) as { verdict: string }).verdict),
    ).to.deep.equal(['recovered', 'refused'])
  })

  it('qemu-vtpm anchors no key: off a terminal without --yes it says so and exits 2, nothing sent; on a terminal it asks', async () => {
    await serve()
    for (const args of [[], ['--json']]) {
      const refused = await runCli(['recover', '-C', node.workspace, '--endpoint', endpoint, ...args])
      expect(refused.code, refused.stdout + refused.stderr).to.equal(2)
      expect(refused.stdout + refused.stderr).to.match(
        /refusing to send the master secret without confirmation: qemu-vtpm is NOT anchored: it proves .*any TPM or program/,
      )
    }
    const json = await runCli(['recover', '-C', node.workspace, '--endpoint', endpoint, '--json'])
    expect(JSON.parse(json.stdout)).to.deep.include({ attestation: attestationAssurance('qemu-vtpm') })
    const declined = await runCliOnTerminal(
      ['recover', '-C', node.workspace, '--endpoint', endpoint],
      process.env,
      { when: 'Send the master secret', keys: 'n\r' },
    )
    expect(declined.code, declined.output).to.equal(0)
    expect(declined.output).to.include('Nothing was sent')
    expect(offered).to.deep.equal([])
    const confirmed = await runCliOnTerminal(
      ['recover', '-C', node.workspace, '--endpoint', endpoint],
      process.env,
      { when: 'Send the master secret', keys: 'y\r' },
    )
    expect(confirmed.code, confirmed.output).to.equal(0)
    expect(offered).to.deep.equal([MASTER])
  })

  it('a master secret the node refuses: exit 1 with the reason, and the node keeps serving', async () => {
    await serve()
    const ws = workspacePaths(node.workspace)
    const right = await readFile(ws.masterSecret)
    await writeFile(
      ws.masterSecret,
      JSON.stringify({ key: randomBytes(32).toString('base64'), salt: MASTER.salt.toString('base64') }),
    )
    const refused = await recover()
    expect(refused.code).to.equal(1)
    expect(refused.stderr).to.match(
      /refused the master secret: the master secret does not open this node's state disk/,
    )
    expect(refused.stderr).to.include('the state disk stays closed')
    await writeFile(ws.masterSecret, right)
    expect((await recover()).code).to.equal(0)
    expect(offered).to.have.length(2)
  })

  it('measurements the node does not meet: exit 4, and the node never sees a request', async () => {
    await serve()
    await expectPcr4(node.workspace, 'ab'.repeat(32))
    const refused = await recover()
    expect(refused.code, refused.stderr).to.equal(4)
    expect(refused.stderr).to.match(
      /failed attestation; the master secret was not sent: attestation refused: measurement validation failed:\s+untrusted measurement value \w+ at index 4/,
    )
    expect(offered).to.deep.equal([])
    expect(lines.filter((l) => l.includes('Recovery request'))).to.deep.equal([])
  })

  it('nothing listening: retries until --timeout, then exit 3 naming the endpoint', async () => {
    endpoint = `127.0.0.1:${await freePort()}`
    const started = Date.now()
    const gone = await recover('--timeout', '2s')
    expect(gone.code).to.equal(3)
    expect(gone.stderr).to.include(`could not reach the node at ${endpoint} within 2s`)
    expect(Date.now() - started).to.be.below(20_000)
  })

  it('the default endpoint is the host of the state clusterEndpoint at port 9999 (its port is the InitServer one); a bad --endpoint is a usage error', async () => {
    await setClusterEndpoint(node.workspace, '127.0.0.1:9000')
    const byState = await runCli(['recover', '-C', node.workspace, '--timeout', '1s', '--yes'])
    expect(byState.code).to.not.equal(0)
    expect(byState.stderr).to.include('the node at 127.0.0.1:9999')
    const bad = await runCli(['recover', '-C', node.workspace, '--endpoint', 'bad host:x'])
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.include('--endpoint "bad host:x" is not HOST, HOST:PORT or [IPv6]:PORT')
  })

  it('a request it cannot use names the field and sends back nothing secret (called over aTLS directly)', async () => {
    await serve()
    const config = await loadConfig(workspacePaths(node.workspace).config)
    const client = new APIClient(
      endpoint,
      createAttestedChannelCredentials({ validators: [validatorForConfig(config)] }),
    )
    const ask = (kmsUri: string, storageUri: string) =>
      new Promise<grpc.ServiceError | null>((resolve) =>
        client.recover({ kmsUri, storageUri }, (err) => resolve(err)),
      )
    try {
      const badUri = await ask('kms://cluster-kms?key=short', '')
      expect(badUri?.code).to.equal(grpc.status.INVALID_ARGUMENT)
      expect(badUri?.details).to.match(/^kms_uri: /)
      const badStorage = await ask(clusterKmsUri(MASTER), 'storage://aws?bucket=x')
      expect(badStorage?.code).to.equal(grpc.status.INVALID_ARGUMENT)
      expect(badStorage?.details).to.match(/^storage_uri: only storage:\/\/no-store/)
      expect(offered).to.deep.equal([])
    } finally {
      client.close()
    }
  })
})
