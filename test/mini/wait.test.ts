import { getEventListeners } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { startDaemon } from '../../src/lib/mini/daemons.js'
import { endedEarly, waitForExit, waitForPort } from '../../src/lib/mini/wait.js'
import { expect } from '../support/chai.js'
import { freePort } from '../support/ports.js'

const exitedWith = (code: number | null) => ({
  pid: 1,
  exited: Promise.resolve(code),
  ending: () => `exit code ${code}`,
})

describe('mini waits: nothing left on the shared abort signal', () => {
  it('a 3 + 3 cluster waits 12 times on one signal (setup and bootstrap per node): no listener stays', async () => {
    const interrupt = new AbortController()
    for (let i = 0; i < 12; i++)
      await waitForExit(exitedWith(0), {
        what: `node ${i}`,
        log: '/dev/null',
        timeoutMs: 60_000,
        signal: interrupt.signal,
      })
    // Node warns (MaxListenersExceededWarning) at the 11th listener: every wait must take its own back
    expect(getEventListeners(interrupt.signal, 'abort')).to.have.length(0)
  })

  it('a failed wait takes its listener back too', async () => {
    const interrupt = new AbortController()
    await expect(
      waitForExit(exitedWith(1), {
        what: 'worker-0',
        log: '/dev/null',
        timeoutMs: 60_000,
        signal: interrupt.signal,
      }),
    ).to.be.rejectedWith('worker-0 exited 1')
    expect(getEventListeners(interrupt.signal, 'abort')).to.have.length(0)
  })

  it('an abort still ends a wait', async () => {
    const interrupt = new AbortController()
    const never = { pid: 1, exited: new Promise<number | null>(() => {}), ending: () => undefined }
    const waiting = waitForExit(never, {
      what: 'worker-0',
      log: '/dev/null',
      timeoutMs: 60_000,
      signal: interrupt.signal,
    })
    interrupt.abort('SIGINT')
    await expect(waiting).to.be.rejectedWith('worker-0 was interrupted')
  })
})

describe('mini waits: a daemon that ends before it listens', () => {
  it('is reported with how it ended (its exit code, or the signal), not only as a port left closed', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-wait-'))
    try {
      const port = await freePort()
      for (const [script, ending] of [
        ['process.exit(3)', 'exit code 3'],
        ["process.kill(process.pid, 'SIGKILL')", 'signal SIGKILL'],
      ] as const) {
        const log = path.join(dir, 'daemon.log')
        const daemon = startDaemon({ argv: [process.execPath, '-e', script], env: process.env, logFile: log })
        await daemon.exited
        await expect(
          waitForPort('127.0.0.1', port, {
            what: 'the daemon',
            log,
            gaveUp: endedEarly(daemon),
          }),
        ).to.be.rejectedWith(`the daemon ended (${ending}) before it listened on 127.0.0.1:${port}`)
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
