/**
 * Watching a node boot from outside (what `mini up` and `mini reboot` do): the supervisor's
 * boot.json and the units' logs are written here as a node writes them, and the watcher must name
 * what the node waits for, pass on a join service's refusal while it waits, and end the wait with
 * the right error: a timeout (exit 1), an interrupt (130/143), a failed unit (with its log).
 */
import { appendFile, mkdir, stat } from 'node:fs/promises'
import {
  NodeBootFailedError,
  NodeBootInterruptedError,
  NodeBootTimeoutError,
  waitUntilBooted,
} from '../../src/lib/mini/boot-watch.js'
import { miniPaths, type MiniNodeRecord } from '../../src/lib/mini/layout.js'
import { writeBootStatus, type BootStatus, type UnitState } from '../../src/lib/mini/machine.js'
import type { NodeBoot } from '../../src/lib/mini/node-boot.js'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const STATE_DISK = 'constellation-state-disk.service'
const BOOTSTRAPPER = 'constellation-bootstrapper.service'
const RECOVER = 'constellation recover -C ws --endpoint 10.0.0.3:9999'
const line = (fields: Record<string, unknown>) =>
  JSON.stringify({ time: '2026-11-27T00:00:00.000Z', level: 'info', ...fields }) + '\n'

describe('mini: watching a node boot (boot.json and its logs)', function () {
  this.timeout(20_000)
  let tmp: TempDir
  let boot: NodeBoot
  let lines: string[]
  const node: MiniNodeRecord = { name: 'worker-0', role: 'worker', index: 1, address: '10.0.0.3' }

  const status = (units: Partial<Record<string, UnitState>>, over: Partial<BootStatus> = {}) =>
    writeBootStatus(boot.files.bootStatus, {
      bootId: boot.bootId,
      supervisorPid: process.pid,
      state: 'booting',
      tpm: { state: 'up' },
      units: Object.fromEntries(
        Object.entries(units).map(([u, state]) => [u, { state: state!, restarts: 0, since: '' }]),
      ),
      updatedAt: '',
      ...over,
    })
  const stateDiskLog = (fields: Record<string, unknown>) =>
    appendFile(boot.files.log('state-disk'), line({ component: 'state-disk', ...fields }))
  const watch = (opts: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
    waitUntilBooted(boot, {
      timeoutMs: opts.timeoutMs ?? 10_000,
      signal: opts.signal,
      progress: (l) => lines.push(l),
      announceWaits: true,
      rebooted: true,
      recoverCommand: RECOVER,
    })

  beforeEach(async () => {
    tmp = await makeTempDir('constell-bootwatch-')
    const files = miniPaths(tmp.dir).node(node.name)
    await mkdir(files.unitState, { recursive: true })
    // a line of the boot before: not this boot's news
    await appendFile(
      files.log('state-disk'),
      line({ level: 'warn', msg: 'old', reason: 'from the last boot' }),
    )
    boot = {
      node,
      files,
      bootId: 'b2',
      supervisorPid: process.pid,
      logStart: { 'state-disk': 0, bootstrap: 0 },
    }
    boot.logStart['state-disk'] = (await stat(files.log('state-disk'))).size
    lines = []
  })
  afterEach(() => tmp.cleanup())

  it('resolves once bootstrap run is done; names the waits on the way and a refusal as it happens, once each', async () => {
    await status({ [STATE_DISK]: 'starting', [BOOTSTRAPPER]: 'waiting' })
    await stateDiskLog({
      msg: 'Waiting for the state disk key: asking the join services, and serving recovery',
      joinServices: ['10.0.0.2:30090'],
    })
    const refusal = {
      level: 'warn',
      msg: "The join service refused this node's attestation",
      endpoint: '10.0.0.2:30090',
      reason:
        'attestation refused: measurement validation failed:\nuntrusted measurement value 00 at index 4',
    }
    await stateDiskLog(refusal)
    await stateDiskLog(refusal) // every retry says it again: reported once
    const done = watch()
    await new Promise((r) => setTimeout(r, 500))
    await status({ [STATE_DISK]: 'exited', [BOOTSTRAPPER]: 'running' })
    await new Promise((r) => setTimeout(r, 500))
    await status({ [STATE_DISK]: 'exited', [BOOTSTRAPPER]: 'exited' })
    await done
    expect(lines).to.deep.equal([
      `worker-0: waiting for its disk key from a join service (10.0.0.2:30090) or \`${RECOVER}\``,
      'worker-0: refused: the join service at 10.0.0.2:30090 refused it: attestation refused: measurement validation failed: untrusted measurement value 00 at index 4',
      'worker-0: waiting for bootstrap run to start its services again',
    ])
  })

  it('the sole control plane: its own join service is down, so it waits for recover, and the timeout says so (exit 1)', async () => {
    boot.node = { ...node, name: 'control-plane-0', role: 'control-plane' }
    await status({ [STATE_DISK]: 'starting', [BOOTSTRAPPER]: 'waiting' })
    await stateDiskLog({
      msg: 'Waiting for the state disk key: asking the join services, and serving recovery',
      joinServices: ['10.0.0.3:30090'],
    })
    await stateDiskLog({
      level: 'warn',
      msg: 'No disk key from this join service',
      endpoint: '10.0.0.3:30090',
      reason: 'connect ECONNREFUSED 10.0.0.3:30090',
    })
    const err = await watch({ timeoutMs: 600 }).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(NodeBootTimeoutError)
    expect(err).to.include({ exitCode: 1 })
    expect((err as Error).message).to.equal(
      `control-plane-0 is not back after 1 s: it is waiting for \`${RECOVER}\`: no other control plane is up to give it its disk key`,
    )
    expect(lines).to.deep.equal([
      `control-plane-0: waiting for \`${RECOVER}\`: no other control plane is up to give it its disk key`,
    ])
  })

  it('an interrupt ends the wait with 130 (SIGINT) or 143 (SIGTERM), naming what the node still waits for', async () => {
    await status({ [STATE_DISK]: 'exited', [BOOTSTRAPPER]: 'running' })
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const stop = new AbortController()
      const waiting = watch({ signal: stop.signal })
      setTimeout(() => stop.abort(signal), 300)
      const err = await waiting.catch((e: unknown) => e)
      expect(err).to.be.instanceOf(NodeBootInterruptedError)
      expect(err).to.include({
        exitCode: code,
        signal,
        waitingFor: 'bootstrap run to start its services again',
      })
    }
  })

  it('a failed unit ends the wait with its log; a supervisor that is gone too; another boot’s status is not this one’s', async () => {
    await status({ [STATE_DISK]: 'exited', [BOOTSTRAPPER]: 'exited' }, { bootId: 'b1' })
    await appendFile(
      boot.files.log('bootstrap'),
      line({ level: 'error', msg: 'Join failed; this node cannot be used' }),
    )
    const failing = watch()
    await new Promise((r) => setTimeout(r, 300))
    await status({ [STATE_DISK]: 'exited', [BOOTSTRAPPER]: 'failed' })
    const err = await failing.catch((e: unknown) => e)
    expect(err).to.be.instanceOf(NodeBootFailedError)
    expect((err as Error).message).to.match(
      /^worker-0's constellation-bootstrapper.service failed: see its log\n.*bootstrap.log ends with:\n.*Join failed/s,
    )

    await status({ [STATE_DISK]: 'starting' })
    boot.supervisorPid = 2 ** 22 + 1 // beyond pid_max's default: no such process
    await expect(watch()).to.be.rejectedWith(
      NodeBootFailedError,
      /worker-0 went off while booting: its supervisor is gone/,
    )
  })
})
