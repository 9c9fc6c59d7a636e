import { expect } from '../support/chai.js'
import { CliError } from '../../src/lib/errors/index.js'
import { assignRoles } from '../../src/lib/bootstrapdata/orchestrate.js'
import { parseBootstrapObjects } from '../../src/lib/bootstrapdata/parse.js'
import { fixtureText } from './helpers.js'

const READY_BY_CONDITION = (text: string) =>
  text.replace(
    'spec:\n  controlPlaneEndpoint:',
    'status:\n  conditions: [{ type: ControlPlaneInitialized, status: "True" }]\nspec:\n  controlPlaneEndpoint:',
  )

const WITH_STATUS = (status: string) => (text: string) =>
  text.replace('spec:\n  controlPlaneEndpoint:', `status:\n${status}\nspec:\n  controlPlaneEndpoint:`)
const INFRA_NOT_READY = WITH_STATUS('  infrastructureReady: false')
const INFRA_CONDITION = (s: string) =>
  WITH_STATUS(`  conditions: [{ type: InfrastructureReady, status: "${s}", reason: Provisioning }]`)

interface Case {
  text: () => Promise<string>
  machine?: string
  anyTime?: boolean
  requireInfrastructureReport?: boolean
  want?: Array<[string, string]>
  waiting?: string[]
  error?: RegExp
  hint?: RegExp
  exitCode?: number
}

const cases: Record<string, Case> = {
  'before the control plane is up, only the first control plane gets (init) data': {
    text: () => fixtureText(),
    want: [['cp-0', 'init']],
    waiting: ['cp-1', 'worker-0'],
  },
  'asking for join data early is an error naming the machine and what to do': {
    text: () => fixtureText(),
    machine: 'cp-1',
    error:
      /Machine "cp-1" cannot get join data yet: Cluster "demo" has not reported its control plane initialized; "cp-0" gets the init data/,
    hint: /cluster\.x-k8s\.io\/control-plane-ready: "true"/,
    exitCode: 1,
  },
  'a worker asked for early is refused too': {
    text: () => fixtureText(),
    machine: 'worker-0',
    error: /Machine "worker-0" cannot get join data yet/,
  },
  'the control-plane-ready annotation releases join data for everyone': {
    text: () => fixtureText(true),
    want: [
      ['cp-0', 'control-plane-join'],
      ['cp-1', 'control-plane-join'],
      ['worker-0', 'worker-join'],
    ],
    waiting: [],
  },
  'so does the ControlPlaneInitialized=True condition': {
    text: async () => READY_BY_CONDITION(await fixtureText()),
    machine: 'worker-0',
    want: [['worker-0', 'worker-join']],
  },
  'attested data may be handed out at once (it holds no token)': {
    text: () => fixtureText(),
    anyTime: true,
    want: [
      ['cp-0', 'init'],
      ['cp-1', 'control-plane-join'],
      ['worker-0', 'worker-join'],
    ],
  },
  'no data at all while status.infrastructureReady is false (v1beta1)': {
    text: async () => INFRA_NOT_READY(await fixtureText(true)),
    want: [],
    waiting: ['cp-0', 'cp-1', 'worker-0'],
  },
  'nor while the InfrastructureReady condition is False (v1beta2)': {
    text: async () => INFRA_CONDITION('False')(await fixtureText()),
    anyTime: true,
    want: [],
    waiting: ['cp-0', 'cp-1', 'worker-0'],
  },
  'the InfrastructureReady condition True releases init data': {
    text: async () => INFRA_CONDITION('True')(await fixtureText()),
    requireInfrastructureReport: true,
    want: [['cp-0', 'init']],
    waiting: ['cp-1', 'worker-0'],
  },
  'a controller waits for a Cluster that reports nothing about its infrastructure': {
    text: () => fixtureText(),
    requireInfrastructureReport: true,
    want: [],
    waiting: ['cp-0', 'cp-1', 'worker-0'],
  },
  'asking for a machine of a Cluster without infrastructure names the wait and the field': {
    text: async () => INFRA_NOT_READY(await fixtureText()),
    machine: 'cp-0',
    error:
      /Machine "cp-0" cannot get bootstrap data yet: Cluster "demo" has not reported its infrastructure ready/,
    hint: /status\.infrastructureReady: true/,
  },
  'an unknown machine is a usage error listing the known ones': {
    text: () => fixtureText(),
    machine: 'cp-9',
    error: /Machine "cp-9" is not in the input \(machines: cp-0, cp-1, worker-0\)/,
    exitCode: 2,
  },
}

describe('bootstrap data orchestration (who gets init, who gets join)', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const objects = parseBootstrapObjects(await tc.text(), 'cluster.yaml')
      const run = () =>
        assignRoles(objects, {
          machine: tc.machine,
          anyTime: tc.anyTime,
          requireInfrastructureReport: tc.requireInfrastructureReport,
        })
      if (tc.error) {
        let caught: unknown
        try {
          run()
        } catch (err) {
          caught = err
        }
        expect(caught).to.be.instanceOf(CliError)
        expect((caught as CliError).message).to.match(tc.error)
        if (tc.hint) expect((caught as CliError).hint).to.match(tc.hint)
        if (tc.exitCode) expect((caught as CliError).exitCode).to.equal(tc.exitCode)
        return
      }
      const got = run()
      expect(got.assignments.map((a) => [a.machine.metadata.name, a.role])).to.deep.equal(tc.want)
      if (tc.waiting) expect(got.waiting.map((w) => w.machine)).to.deep.equal(tc.waiting)
    })
  }
})
