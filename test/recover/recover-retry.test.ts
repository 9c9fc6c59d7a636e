/**
 * The operator's side of recovery when the node is busy or an answer is lost: `recoverNode` against
 * a scripted recovery endpoint (real gRPC over aTLS with the fake attestation authority; the script
 * stands in for the node's disk and queue). Its verdict must match what happened on the node.
 */
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
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
import {
  recoverNode,
  recoveryEndpoint,
  renderRecoverResult,
  type RecoverResult,
} from '../../src/lib/recover/index.js'
import type { RecoverDeps } from '../../src/lib/recover/recover.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { createFakeAttestation, type FakeFault } from '../support/fake-attestation.js'
import { freePort, ownLoopback } from '../support/ports.js'
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

  async function node(script: Script, fault: FakeFault = 'none'): Promise<string> {
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
    return listenOn(
      server,
      '127.0.0.1:0',
      createAttestedServerCredentials({ issuer: fake.issuer(fault) }),
      'test',
    )
  }
  const recover = (
    endpoint: string | undefined,
    timeoutMs = 20_000,
    retryIntervalMs = 50,
    more: Partial<RecoverDeps> = {},
  ): Promise<RecoverResult> =>
    recoverNode(
      { workspace, endpoint, timeoutMs, timeout: `${timeoutMs / 1000}s` },
      {
        credentials: () => createAttestedChannelCredentials({ validators: [fake.validator()] }),
        log: createLogger({ format: 'text', write: (l) => log.push(l) }),
        retryIntervalMs,
        callTimeoutMs: 500,
        ...more,
      },
    )
  /** A wait that never ends by itself: only --timeout ends it, so --timeout lands in a wait, never in a call. */
  const untilTimeout = (_ms: number, signal?: AbortSignal) =>
    new Promise<void>((_, reject) =>
      signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
    )
  /** A wait that refuses: the run ends after its first retryable failure, with that refusal. */
  const noWaiting = () => Promise.reject(new Error('no more waiting'))
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
    expect((err as CliError).message).to.equal(`the node at ${endpoint} did not answer within 0.3s`)
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
    // the node's words, not the error's rendering of itself (code and name)
    for (const line of retries) expect(line).not.to.match(/UNAVAILABLE|Error:/)
  })

  /** The CliError `recover` ends with, against a node that answers every call with `answer`. */
  async function failureOf(answer: Partial<grpc.StatusObject>, timeoutMs = 20_000) {
    const endpoint = await node(() => answer)
    const err = await recover(endpoint, timeoutMs).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    return { endpoint, err: err as CliError }
  }

  it('a master secret the node refuses: the refusal and what to check, exit 1', async () => {
    const { endpoint, err } = await failureOf({
      code: grpc.status.PERMISSION_DENIED,
      details: 'wrong secret',
    })
    expect(err.message).to.equal(`the node at ${endpoint} refused the master secret: wrong secret`)
    expect(err.hint).to.equal(
      'the state disk stays closed; check that constellation-mastersecret.json belongs to this cluster',
    )
    expect(err.exitCode).to.equal(ExitCode.Failure)
    expect(calls, 'a refusal is not retried').to.equal(1)
  })

  it('an error on the node: recovering failed, with its details, not retried', async () => {
    const { endpoint, err } = await failureOf({ code: grpc.status.INTERNAL, details: 'disk gone' })
    expect(err.message).to.equal(`recovering the node at ${endpoint} failed: disk gone`)
    expect(err.exitCode).to.equal(ExitCode.Failure)
    expect(calls).to.equal(1)
  })

  it('busy until --timeout: says so, unreachable, and suspects a flood', async () => {
    // the node asks for 5 s, so --timeout (1 s) ends the wait, never a call in flight
    const endpoint = await node(() => busy(5_000))
    const err = (await recover(endpoint, 1_000).catch((e: unknown) => e)) as CliError
    expect(err.message).to.equal(
      `the node at ${endpoint} was busy with other master secrets until --timeout (1s): the node is trying other master secrets; retry in 5 s`,
    )
    expect(err.exitCode).to.equal(ExitCode.Unreachable)
    expect(err.hint).to.match(/^someone may be flooding the node's recovery endpoint/)
    expect(calls).to.equal(1)
  })

  it('a busy node naming no usable time (0 ms) is left alone for a second', async () => {
    const zero = new grpc.Metadata()
    zero.set('grpc-retry-pushback-ms', '0')
    const endpoint = await node((n) =>
      n === 0 ? { code: grpc.status.RESOURCE_EXHAUSTED, details: 'busy', metadata: zero } : 'ok',
    )
    const waits: number[] = []
    const sleep = (ms: number) => (waits.push(ms), Promise.resolve())
    expect(await recover(endpoint, 20_000, 50, { sleep })).to.deep.equal({ endpoint, recovered: true })
    expect(waits).to.deep.equal([1_000])
    expect(log.join('\n')).to.include('The node is busy: busy; trying again in 1 s')
  })

  it("a busy node: the log line names the endpoint and the attempt; the next wait is the node's, the one after is the interval again", async () => {
    const endpoint = await node((n) =>
      n === 0 ? busy(700) : n === 1 ? { code: grpc.status.UNAVAILABLE, details: 'x' } : 'ok',
    )
    const waits: number[] = []
    const sleep = (ms: number) => (waits.push(ms), Promise.resolve())
    expect(await recover(endpoint, 20_000, 50, { sleep })).to.deep.equal({ endpoint, recovered: true })
    expect(waits).to.deep.equal([700, 50])
    expect(log[0]).to.equal(
      `INFO The node is busy: the node is trying other master secrets; retry in 0.7 s; trying again in 0.7 s endpoint=${endpoint} attempt=1`,
    )
  })

  it('an attempt whose answer was lost, then a refusal: the refusal, not a recovery', async () => {
    const endpoint = await node((n) =>
      n === 0 ? 'never' : { code: grpc.status.PERMISSION_DENIED, details: 'wrong secret' },
    )
    const err = (await recover(endpoint).catch((e: unknown) => e)) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.equal(`the node at ${endpoint} refused the master secret: wrong secret`)
    expect(calls).to.equal(2)
  })

  it('--timeout in a wait after an unanswered attempt: could not reach it within the timeout, with the last failure', async () => {
    const endpoint = await node(() => 'never')
    const err = (await recover(endpoint, 2_000, 50, { sleep: untilTimeout, callTimeoutMs: 200 }).catch(
      (e: unknown) => e,
    )) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.match(
      new RegExp(`^could not reach the node at ${endpoint} within 2s: Deadline exceeded`),
    )
    expect(err.exitCode).to.equal(ExitCode.Unreachable)
    expect(calls).to.equal(1)
  })

  it("no --endpoint: the node is the state's clusterEndpoint host, on port 9999", async () => {
    const host = ownLoopback()
    const state = workspacePaths(workspace).state
    await writeFile(state, (await readFile(state, 'utf8')).replaceAll('127.0.0.1', host))
    const err = (await recover(undefined, 20_000, 50, { sleep: noWaiting }).catch(
      (e: unknown) => e,
    )) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.match(
      new RegExp(`^recovering the node at ${host.replaceAll('.', '\\.')}:9999 failed: .*no more waiting`),
    )
  })

  it("an unreadable endpoint names where it came from: --endpoint, or the state's clusterEndpoint", async () => {
    const flag = (await recover('host:port').catch((e: unknown) => e)) as CliError
    expect(flag.message).to.equal('--endpoint "host:port" is not HOST, HOST:PORT or [IPv6]:PORT')
    expect(flag.exitCode).to.equal(ExitCode.Usage)
    const state = workspacePaths(workspace).state
    await writeFile(
      state,
      (await readFile(state, 'utf8')).replace(/clusterEndpoint: .*/, 'clusterEndpoint: ""'),
    )
    const fromState = (await recover(undefined).catch((e: unknown) => e)) as CliError
    expect(fromState.message).to.equal(
      `${state}: infrastructure.clusterEndpoint "" is not HOST, HOST:PORT or [IPv6]:PORT`,
    )
  })

  it('no master secret in the workspace: names the file, sends nothing', async () => {
    const endpoint = await node(() => 'ok')
    await rm(workspacePaths(workspace).masterSecret)
    const err = (await recover(endpoint).catch((e: unknown) => e)) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.equal(`${workspacePaths(workspace).masterSecret} does not exist`)
    expect(err.hint).to.match(/^recover needs the master secret init wrote/)
    expect(calls).to.equal(0)
  })

  it('nothing listening until --timeout: could not reach it within the timeout, unreachable', async () => {
    const endpoint = `127.0.0.1:${await freePort()}`
    // a 5 s retry interval: --timeout (1 s) ends the wait after a refused connection, never a call
    const err = (await recover(endpoint, 1_000, 5_000).catch((e: unknown) => e)) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.match(
      new RegExp(`^could not reach the node at ${endpoint} within 1s: .*ECONNREFUSED`),
    )
    expect(err.exitCode).to.equal(ExitCode.Unreachable)
    expect(err.hint).to.match(/serves recovery on port 9999/)
  })

  it('a node that fails attestation: exit 4, the secret never sent, and no retry', async () => {
    const endpoint = await node(() => 'ok', 'wrong-measurements')
    const err = (await recover(endpoint).catch((e: unknown) => e)) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.match(
      new RegExp(`^the node at ${endpoint} failed attestation; the master secret was not sent: `),
    )
    expect(err.exitCode).to.equal(ExitCode.AttestationFailed)
    expect(err.hint).to.equal('check the measurements in constellation-conf.yaml against the node image')
    expect(calls).to.equal(0)
  })

  it('endpoints: port 9999 unless named; the result line says how it recovered', () => {
    expect(recoveryEndpoint('10.0.0.1', '--endpoint')).to.equal('10.0.0.1:9999')
    expect(recoveryEndpoint('10.0.0.1:7000', '--endpoint')).to.equal('10.0.0.1:7000')
    expect(recoveryEndpoint('::1', '--endpoint')).to.equal('[::1]:9999')
    expect(renderRecoverResult({ endpoint: 'e:1', recovered: true })).to.equal(
      'Recovered the node at e:1: it opens its state disk and boots.',
    )
    expect(renderRecoverResult({ endpoint: 'e:1', recovered: true, answerLost: true })).to.equal(
      'Recovered the node at e:1: it answered that it recovered already, after an attempt of this run went unanswered; it opens its state disk and boots.',
    )
  })
})
