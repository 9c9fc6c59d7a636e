import { randomBytes } from 'node:crypto'
import { status } from '@grpc/grpc-js'
import { acquireDiskKey } from '../../../src/lib/bootstrapper/state-disk/disk-key.js'
import { ClusterKms } from '../../../src/lib/kms/index.js'
import { createLogger } from '../../../src/lib/system/index.js'
import { expect } from '../../support/chai.js'

const DISK_UUID = '0a1b2c3d-0000-4000-8000-000000000000'
const kms = new ClusterKms(randomBytes(32), randomBytes(32))

/** A failed IssueRejoinTicket as grpc-js reports it. */
const unavailable = (why: string) =>
  Object.assign(new Error('14 UNAVAILABLE'), { code: status.UNAVAILABLE, details: why })
const REFUSED = unavailable(
  'No connection established. Last error: Error: connect ECONNREFUSED 10.0.0.1:30090',
)
const TIMED_OUT = unavailable(
  'No connection established. Last error: Error: connect ETIMEDOUT 10.0.0.1:30090',
)

describe('a rebooted node asking the join services for its disk key: the pace of its rounds', () => {
  it('while nothing listens (the control planes reboot too) it asks at its first pace, said once; a timeout backs off', async () => {
    const answers: Error[] = [REFUSED, REFUSED, REFUSED, TIMED_OUT, TIMED_OUT]
    const slept: number[] = []
    const lines: string[] = []
    const stop = new AbortController()
    const keys = await acquireDiskKey({
      diskUuid: DISK_UUID,
      opensWith: (key) => Promise.resolve(key.equals(kms.diskKey(DISK_UUID))),
      endpoints: ['10.0.0.1:30090'],
      requestRejoinTicket: () => {
        const answer = answers.shift()
        return answer
          ? Promise.reject(answer)
          : Promise.resolve({
              stateDiskKey: kms.diskKey(DISK_UUID),
              measurementSecret: kms.measurementSecret(),
            })
      },
      // no recovery in this test: an endpoint that serves nothing
      recoveryEndpoint: () => ({
        start: () => Promise.resolve('127.0.0.1:0'),
        stop: () => Promise.resolve(),
      }),
      log: createLogger({ format: 'json', write: (l) => lines.push(l) }),
      retry: { initialDelayMs: 100, maxDelayMs: 60_000, jitter: 0, sleep: async (ms) => void slept.push(ms) },
      signal: stop.signal,
    })
    expect(keys.source).to.equal('10.0.0.1:30090')
    expect(slept).to.deep.equal([100, 100, 100, 100, 200])
    const said = lines.map((l) => JSON.parse(l) as { msg: string; reason?: string })
    expect(said.filter((l) => l.msg.startsWith('No join service listens yet'))).to.have.length(1)
    expect(said.filter((l) => /ECONNREFUSED/.test(l.reason ?? ''))).to.have.length(1)
    expect(said.filter((l) => /ETIMEDOUT/.test(l.reason ?? ''))).to.have.length(2)
    expect(said.filter((l) => l.msg === 'Asking the join services again')).to.have.length(2)
  })
})
