/**
 * What `bootstrap run` does around its daemon (runNode): which services a node starts after init
 * or join, when it marks its state disk for reset, and how a rebooted node starts without serving.
 * The daemon and systemctl are stand-ins here; test/e2e runs the real ones.
 */
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { runNode, type ServedDaemon } from '../../src/lib/bootstrapper/node-run.js'
import { CliError } from '../../src/lib/errors/index.js'
import { writeNodeState, type NodeRole } from '../../src/lib/nodeconfig/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import type { StateDiskMark } from '../../src/lib/statedisk/index.js'
import { createLogger, type Runner } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const CP_UNITS = ['constellation-keyservice.service', 'constellation-joinservice.service']

interface Case {
  role: NodeRole
  outcome?: ServedDaemon['outcome']
  /** PCR 15 set and a node state on the disk: a node bootstrapped in an earlier boot. */
  rebooted?: boolean
  markFails?: boolean
  wantStarted: string[][]
  wantMarks: StateDiskMark[]
  wantError?: RegExp
  wantServed: boolean
}

const cases: Record<string, Case> = {
  'initialized: starts the control-plane services': {
    role: 'control-plane',
    outcome: 'initialized',
    wantStarted: [CP_UNITS],
    wantMarks: [],
    wantServed: true,
  },
  'a control plane that joined: starts the control-plane services': {
    role: 'control-plane',
    outcome: 'joined',
    wantStarted: [CP_UNITS],
    wantMarks: [],
    wantServed: true,
  },
  'a worker that joined: starts nothing more': {
    role: 'worker',
    outcome: 'joined',
    wantStarted: [],
    wantMarks: [],
    wantServed: true,
  },
  'stopped before init or join: starts nothing, marks nothing': {
    role: 'control-plane',
    outcome: 'stopped',
    wantStarted: [],
    wantMarks: [],
    wantServed: true,
  },
  'init failed past the lock: disk marked for reset, an error that says so': {
    role: 'control-plane',
    outcome: 'failed',
    wantStarted: [],
    wantMarks: ['reset'],
    wantError: /^init failed after the node lock was taken/,
    wantServed: true,
  },
  'join failed past the lock: disk marked for reset, an error that says so': {
    role: 'worker',
    outcome: 'join-failed',
    wantStarted: [],
    wantMarks: ['reset'],
    wantError: /^joining the cluster failed after the node lock was taken/,
    wantServed: true,
  },
  'the reset mark cannot be written: the same error': {
    role: 'worker',
    outcome: 'join-failed',
    markFails: true,
    wantStarted: [],
    wantMarks: [],
    wantError: /^joining the cluster failed after the node lock was taken/,
    wantServed: true,
  },
  'a rebooted control plane: starts its kubelet and services, serves nothing': {
    role: 'control-plane',
    rebooted: true,
    wantStarted: [['kubelet.service', ...CP_UNITS]],
    wantMarks: [],
    wantServed: false,
  },
  'a rebooted worker: starts its kubelet, serves nothing': {
    role: 'worker',
    rebooted: true,
    wantStarted: [['kubelet.service']],
    wantMarks: [],
    wantServed: false,
  },
}

describe('bootstrap run around its daemon (runNode)', () => {
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const paths = nodePaths(path.join(dir, 'root'))
        if (tc.rebooted)
          await writeNodeState(paths, { role: tc.role, measurementSalt: randomBytes(32), diskUuid: 'a-b' })
        const started: string[][] = []
        const stubRunner: Runner = {
          run: (file, args) => {
            if (file === 'systemctl' && args[0] === 'start') started.push(args.slice(1))
            return Promise.resolve({ stdout: '', stderr: '' })
          },
        }
        const marks: StateDiskMark[] = []
        let served = false
        const got = runNode({
          paths,
          role: tc.role,
          runner: stubRunner,
          log: createLogger({ format: 'json', write: () => {} }),
          readClusterIdPcr: () => Promise.resolve(Buffer.alloc(32, tc.rebooted ? 1 : 0)),
          createDaemon: () => ({ outcome: tc.outcome ?? 'stopped' }),
          serve: () => Promise.resolve(void (served = true)),
          disk: {
            device: '/dev/stub',
            writeMark: (mark) =>
              tc.markFails ? Promise.reject(new Error('no header')) : Promise.resolve(void marks.push(mark)),
          },
        })
        if (tc.wantError) {
          const err = await got.then(
            () => undefined,
            (e: unknown) => e,
          )
          expect(err).to.be.instanceOf(CliError)
          expect((err as Error).message).to.match(tc.wantError)
        } else await got
        expect(started).to.deep.equal(tc.wantStarted)
        expect(marks).to.deep.equal(tc.wantMarks)
        expect(served).to.equal(tc.wantServed)
      } finally {
        await cleanup()
      }
    })
})
