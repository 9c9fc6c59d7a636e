/**
 * The recovery endpoint of a rebooted node under the requests an attacker sends it: the caller is
 * not authenticated (the node attests to the caller, never the reverse), so anyone may offer master
 * secrets. Real gRPC over aTLS on loopback with the fake attestation authority (the server merely
 * carries attestation); attackers are other loopback addresses (test/support/raw-peer.ts); the
 * node's disk is a spy that opens with one key. The genuine operator is the `recover` library.
 */
import { randomBytes } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import { acquireDiskKey } from '../../src/lib/bootstrapper/state-disk/disk-key.js'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { clusterKmsUri, ClusterKms, writeMasterSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { recoverNode } from '../../src/lib/recover/index.js'
import { RecoveryServer } from '../../src/lib/statedisk/index.js'
import { type RecoveryServerOptions } from '../../src/lib/statedisk/recovery-server.js'
import { createLogger } from '../../src/lib/system/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import { expect } from '../support/chai.js'
import { type RawCallResult } from '../support/raw-peer.js'
import { RECOVER, RecoveryNode, recoverRequest } from '../support/recovery-node.js'
import { makeTempDir } from '../support/temp.js'

const badRequest = () => recoverRequest('kms://x', '')
const tally = (results: RawCallResult[]) =>
  results.reduce<Record<string, number>>((t, r) => {
    const name = String(grpc.status[r.code])
    return { ...t, [name]: (t[name] ?? 0) + 1 }
  }, {})

describe('recovery endpoint under a flood of master secrets (aTLS, real gRPC)', function () {
  this.timeout(60_000)
  let node: RecoveryNode
  beforeEach(() => (node = new RecoveryNode()))
  afterEach(() => node.close())
  const wrongSecret = () => recoverRequest(clusterKmsUri({ key: randomBytes(32), salt: node.master.salt }))
  const rightSecret = () => node.rightSecret()
  /** The node; `hold` keeps each try waiting until it resolves. */
  const serve = (opts?: Partial<RecoveryServerOptions>, hold?: Promise<void>) => {
    node.hold = hold
    return node.serve(opts)
  }
  const attacker = (from: string) => node.from(from)

  it("a refused master secret never names the disk to the caller; the node's own log does", async () => {
    let address = ''
    const stop = new AbortController()
    const acquiring = acquireDiskKey({
      diskUuid: node.diskUuid,
      opensWith: (key) =>
        Promise.resolve(key.equals(new ClusterKms(node.master.key, node.master.salt).diskKey(node.diskUuid))),
      endpoints: [],
      requestRejoinTicket: () => Promise.reject(new Error('no join service here')),
      recoveryEndpoint: (recover) => {
        const s = new RecoveryServer({
          listen: '127.0.0.1:0',
          credentials: node.credentials(),
          recover,
          log: node.log,
        })
        return { start: async () => (address = await s.start()), stop: () => s.stop(100) }
      },
      log: node.log,
      signal: stop.signal,
    })
    acquiring.catch(() => {})
    while (!address) await new Promise((r) => setTimeout(r, 20))
    node.port = Number(address.split(':').pop())
    const refused = await (await attacker('127.0.0.2')).call(RECOVER, wrongSecret())
    stop.abort(new Error('test over'))
    expect(refused.code).to.equal(grpc.status.PERMISSION_DENIED)
    expect(refused.details).to.match(/does not open this node's state disk/)
    expect(refused.details).not.to.include(node.diskUuid)
    expect(node.lines.join('\n')).to.include(node.diskUuid) // the node's own log names it
  })

  it('400 wrong secrets at once from one address: the disk tries one, the rest are refused RESOURCE_EXHAUSTED with a retry hint', async () => {
    await serve({ requests: { backoffInitialMs: 60_000 } }) // longer than the flood, however slow the machine
    const flood = await attacker('127.0.0.2')
    const results = await Promise.all(Array.from({ length: 400 }, () => flood.call(RECOVER, wrongSecret())))
    expect(node.tried, 'master secrets tried on the disk').to.have.length(1)
    expect(tally(results)).to.deep.equal({ PERMISSION_DENIED: 1, RESOURCE_EXHAUSTED: 399 })
    const busy = results.find((r) => r.code === grpc.status.RESOURCE_EXHAUSTED)
    expect(Number(busy?.headers['grpc-retry-pushback-ms'])).to.be.above(0)
    expect(busy?.details).to.match(/retry in \d+ s/)
    const pushbackMs = Number(busy?.headers['grpc-retry-pushback-ms'])
    expect(busy?.details, 'the pushback in seconds, rounded up to a tenth').to.match(
      new RegExp(`; retry in ${Math.ceil(pushbackMs / 100) / 10} s$`),
    )
    const logged = node.lines.filter((l) => l.includes('Recovery request'))
    expect(logged.length, 'a flood costs a few log lines, not one each').to.be.at.most(20)
    expect(logged.at(-1)).to.match(/"count":\d+/)
  })

  it('wrong secrets from 20 addresses while a try takes long: the queue holds 8, the others are refused at once', async () => {
    let release!: () => void
    await serve({}, new Promise<void>((r) => (release = r)))
    let answered = 0
    let allRefused!: () => void
    const refusedAtOnce = new Promise<void>((r) => (allRefused = r))
    const calls = Array.from({ length: 20 }, async (_, i) => {
      const answer = await (await attacker(`127.0.0.${i + 2}`)).call(RECOVER, wrongSecret())
      if (++answered === 12) allRefused()
      return answer
    })
    await refusedAtOnce // before the fix all 20 queued behind the held try, and nobody was answered
    release()
    const answers = await Promise.all(calls)
    expect(tally(answers)).to.deep.equal({ PERMISSION_DENIED: 8, RESOURCE_EXHAUSTED: 12 })
    expect(node.tried).to.have.length(8)
  }).timeout(20_000)

  it('a request whose caller hung up while it waited is never tried on the disk', async () => {
    let release!: () => void
    await serve({}, new Promise<void>((r) => (release = r)))
    const first = (await attacker('127.0.0.2')).call(RECOVER, wrongSecret()) // held in its try
    const leaving = await attacker('127.0.0.3')
    const hangUp = new AbortController()
    const abandoned = leaving.call(RECOVER, rightSecret(), { cancel: hangUp.signal })
    // calls on one connection arrive in order: once this one is answered, the one before is queued
    expect((await leaving.call(RECOVER, badRequest())).code).to.equal(grpc.status.INVALID_ARGUMENT)
    hangUp.abort()
    await abandoned
    expect((await leaving.call(RECOVER, badRequest())).code).to.equal(grpc.status.INVALID_ARGUMENT) // its hang-up is seen
    release()
    await first
    const next = await (await attacker('127.0.0.4')).call(RECOVER, wrongSecret())
    expect(
      node.tried.map((k) => (k.equals(node.master.key) ? 'right' : 'wrong')),
      'the abandoned (right) secret must not have recovered the node',
    ).to.deep.equal(['wrong', 'wrong'])
    expect(next.code).to.equal(grpc.status.PERMISSION_DENIED)
  })

  it("a genuine operator's recover succeeds while 12 other addresses flood wrong secrets", async () => {
    const endpoint = await serve({ requests: { backoffInitialMs: 60_000 } })
    const { dir, cleanup } = await makeTempDir()
    try {
      const workspace = `${dir}/ws`
      await generateWorkspace({
        workspace,
        provider: 'qemu',
        kubernetes: 'v1.31',
        variant: 'qemu-vtpm',
        name: 'flood',
        endpoint: '127.0.0.1',
      })
      await writeMasterSecret(workspacePaths(workspace).masterSecret, node.master)
      let operatorDone = false
      let sent = 0
      let flooding!: () => void
      const underway = new Promise<void>((r) => (flooding = r))
      const floodFrom = async (from: string) => {
        const s = await attacker(from)
        const results: RawCallResult[] = []
        // four at a time per address until the operator is done, at most 3,000 in all
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            while (!operatorDone && sent < 3_000) {
              if (++sent === 200) flooding()
              results.push(await s.call(RECOVER, wrongSecret()))
            }
          }),
        )
        flooding() // a flood that ended early must not stall the operator
        return results
      }
      const flood = Promise.all(Array.from({ length: 12 }, (_, i) => floodFrom(`127.0.0.${i + 2}`)))
      await underway
      const operatorLog: string[] = []
      const result = await recoverNode(
        { workspace, endpoint, timeoutMs: 50_000, timeout: '50s' },
        {
          credentials: () => createAttestedChannelCredentials({ validators: [node.attestation.validator()] }),
          log: createLogger({ format: 'text', write: (l) => operatorLog.push(l) }),
        },
      ).finally(() => (operatorDone = true))
      const answers = (await flood).flat()
      expect(result).to.deep.equal({ endpoint, recovered: true })
      const wrong = node.tried.filter((k) => !k.equals(node.master.key))
      expect(wrong.length, 'wrong secrets tried: at most one per attacking address').to.be.at.most(12)
      expect(node.tried.filter((k) => k.equals(node.master.key))).to.have.length(1)
      expect(
        answers.filter((r) => r.code === grpc.status.OK),
        'no attacker recovered the node',
      ).to.have.length(0)
    } finally {
      await cleanup()
    }
  })
})
