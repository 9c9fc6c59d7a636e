/**
 * The operator's side of recovery when the node is busy or an answer is lost: `recoverNode` against
 * a scripted recovery endpoint (real gRPC over aTLS with the fake attestation authority; the script
 * stands in for the node's disk and queue). Its verdict must match what happened on the node.
 */
import { randomBytes } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import { APIService, type RecoverMessage, type RecoverResponse } from '../../src/gen/recover.js'
import {
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
} from '../../src/lib/atls/index.js'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { CliError, ExitCode } from '../../src/lib/errors/index.js'
import { listenOn } from '../../src/lib/grpc/index.js'
import { writeMasterSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { recoverNode, type RecoverResult } from '../../src/lib/recover/index.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { createFakeAttestation } from '../support/fake-attestation.js'
import { freePort } from '../support/ports.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const fake = createFakeAttestation()

/** What the node does with the n-th call (0-based): answer it, or leave it unanswered. */
type Script = (n: number) => Partial<grpc.StatusObject> | 'ok' | 'never'

describe('constellation recover when the node is busy or an answer is lost', function () {
  this.timeout(30_000)
  let temp: TempDir
  let workspace: string
  let server: grpc.Server | undefined
  let calls: number
  let log: string[]
  beforeEach(async () => {
    temp = await makeTempDir()
    workspace = `${temp.dir}/ws`
    await generateWorkspace({
      workspace,
      provider: 'qemu',
      kubernetes: 'v1.31',
      variant: 'qemu-vtpm',
      name: 'retry',
      endpoint: '127.0.0.1',
    })
    await writeMasterSecret(workspacePaths(workspace).masterSecret, {
      key: randomBytes(32),
      salt: randomBytes(32),
    })
    calls = 0
    log = []
  })
  afterEach(async () => {
    server?.forceShutdown()
    server = undefined
    await temp.cleanup()
  })

  async function node(script: Script): Promise<string> {
    server = new grpc.Server()
    server.addService(APIService, {
      recover: (
        _call: grpc.ServerUnaryCall<RecoverMessage, RecoverResponse>,
        reply: grpc.sendUnaryData<RecoverResponse>,
      ) => {
        const answer = script(calls++)
        if (answer === 'ok') reply(null, {})
        else if (answer !== 'never') reply(answer)
      },
    })
    return listenOn(server, '127.0.0.1:0', createAttestedServerCredentials({ issuer: fake.issuer() }), 'test')
  }
  const recover = (endpoint: string, timeoutMs = 20_000): Promise<RecoverResult> =>
    recoverNode(
      { workspace, endpoint, timeoutMs, timeout: `${timeoutMs / 1000}s` },
      {
        credentials: () => createAttestedChannelCredentials({ validators: [fake.validator()] }),
        log: createLogger({ format: 'text', write: (l) => log.push(l) }),
        retryIntervalMs: 50,
        callTimeoutMs: 500,
      },
    )
  const busy = (ms: number): Partial<grpc.StatusObject> => {
    const metadata = new grpc.Metadata()
    metadata.set('grpc-retry-pushback-ms', String(ms))
    return {
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: `the node is trying other master secrets; retry in ${ms / 1000} s`,
      metadata,
    }
  }
  const recoveredAlready = { code: grpc.status.FAILED_PRECONDITION, details: 'this node recovered already' }

  it('RESOURCE_EXHAUSTED: waits as the node asks, tries again, and says so', async () => {
    const endpoint = await node((n) => (n < 2 ? busy(100) : 'ok'))
    expect(await recover(endpoint)).to.deep.equal({ endpoint, recovered: true })
    expect(calls).to.equal(3)
    expect(log.filter((l) => /node is busy/i.test(l))).to.have.length(2)
    expect(log.join('\n')).to.match(/trying other master secrets; retry in 0\.1 s.*trying again in 0\.1 s/)
  })

  it('an attempt whose answer was lost, then "recovered already": recovered, and it says how', async () => {
    const endpoint = await node((n) => (n === 0 ? 'never' : recoveredAlready))
    const result = await recover(endpoint)
    expect(result).to.deep.equal({ endpoint, recovered: true, answerLost: true })
    expect(calls).to.equal(2)
  })

  it('"recovered already" on the first attempt is still a failure: someone else recovered it', async () => {
    const endpoint = await node(() => recoveredAlready)
    const err = await recover(endpoint).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    expect((err as CliError).message).to.include('has nothing to recover: this node recovered already')
  })

  it('--timeout ends an attempt the node may be trying: unreachable, and it says the node may have recovered', async () => {
    const endpoint = await node(() => 'never')
    const err = await recover(endpoint, 300).catch((e: unknown) => e)
    expect((err as CliError).exitCode).to.equal(ExitCode.Unreachable)
    expect((err as CliError).hint).to.match(/may have recovered.*run recover again/)
  })

  it('a node that does not answer yet: every retry names the node, the attempt and why', async () => {
    const endpoint = `127.0.0.1:${await freePort()}`
    await recover(endpoint, 1_000).catch(() => undefined)
    const retries = log.filter((l) => /trying again/.test(l))
    expect(retries.length).to.be.greaterThan(1)
    retries.forEach((line, i) =>
      expect(line).to.match(
        new RegExp(
          `Waiting for the node at ${endpoint} to answer: attempt ${i + 1} failed: .*ECONNREFUSED.*; trying again in 0\\.05s`,
        ),
      ),
    )
  })
})
