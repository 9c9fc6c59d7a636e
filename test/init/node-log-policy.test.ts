import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { status } from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import {
  attestedClient,
  callInit,
  initRequest,
  pcr15,
  startNode,
  type RunningNode,
} from '../support/init-client.js'
import { startLocalNode, type LocalNode } from '../support/local-node.js'
import { ATTEMPT_LOG_LIMIT_BYTES } from '../../src/lib/bootstrapper/logs.js'

describe('node: who gets the node log from a failed Init (swtpm, cryptsetup, aTLS, kubeadm contract fake)', function () {
  this.timeout(120_000)
  let node: LocalNode
  let running: RunningNode | undefined
  beforeEach(async () => {
    node = await startLocalNode()
    running = undefined
  })
  afterEach(async () => {
    await running?.daemon.stop(1_000)
    await node.stop()
  })

  it('a wrong init secret gets the status and a short message, and no log chunk', async () => {
    running = await startNode(node)
    const client = await attestedClient(node, running.address)
    try {
      const reply = await callInit(client, await initRequest(node, { initSecret: Buffer.alloc(32, 1) }))
      expect(reply.code).to.equal(status.PERMISSION_DENIED)
      expect(reply.failure).to.equal('rpc error: code = PERMISSION_DENIED desc = invalid init secret')
      expect(reply.logChunks).to.deep.equal([])
    } finally {
      client.close()
    }
  })

  it("kubeadm's join credentials never reach the caller; the caller gets only this attempt's log, capped", async () => {
    const printed = path.join(node.dir, 'kubeadm-printed.jsonl')
    running = await startNode(node, {
      KUBEADM_FAKE_FAIL: 'init',
      KUBEADM_FAKE_PRINT_TOKEN: '1',
      KUBEADM_FAKE_PRINTED: printed,
    })
    const client = await attestedClient(node, running.address)
    try {
      const reply = await callInit(client, await initRequest(node))
      expect(reply.code).to.equal(status.INTERNAL)
      const log = Buffer.concat(reply.logChunks).toString()
      expect(log).to.include('timed out waiting for the condition').and.include('"msg":"Init failed"')
      expect(log).to.include('kubeadm join').and.include('[redacted]')
      const creds = JSON.parse(await readFile(printed, 'utf8')) as Record<string, string>
      for (const value of Object.values(creds)) expect(log).not.to.include(value)
      expect(log).not.to.match(/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/)
      expect(log).not.to.include('Init server listening')
      expect(log.length).to.be.at.most(ATTEMPT_LOG_LIMIT_BYTES)
      expect(reply.logChunks.every((c) => c.length <= 1024)).to.equal(true)
    } finally {
      client.close()
    }
  })

  it('200 concurrent wrong-secret calls all finish refused, and a correct Init afterwards still works', async () => {
    running = await startNode(node)
    const client = await attestedClient(node, running.address)
    try {
      const wrong = await initRequest(node, { initSecret: Buffer.alloc(32, 1) })
      const replies = await Promise.all(Array.from({ length: 200 }, () => callInit(client, wrong)))
      for (const reply of replies) {
        expect([status.PERMISSION_DENIED, status.RESOURCE_EXHAUSTED]).to.include(reply.code)
        expect(reply.logChunks).to.deep.equal([])
      }
      expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
      const ok = await callInit(client, await initRequest(node))
      expect(ok.code, ok.failure).to.equal(status.OK)
      expect(ok.kubeconfig?.toString()).to.include('client-key-data')
    } finally {
      client.close()
    }
  })
})
