/**
 * init's release bring-up against a cluster that does not answer, with the REAL helm 3 and 4: the
 * step says what it waits for, every retry says why and which attempt of how many, and the failure
 * is upgrade's (exit 3, the kubeconfig to check), after a few short retries, not 30 s ones.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { loadConfig, loadState } from '../../src/lib/config/index.js'
import { chainMessage, exitCodeOf } from '../../src/lib/errors/index.js'
import { prepareBringUp } from '../../src/lib/helm/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { createRunner, type Step } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { HELM_MAJORS, realHelmEnv } from '../support/helm.js'
import { freePort } from '../support/ports.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { makeUpgradeWorkspace } from '../support/upgrade-workspace.js'

const FIXTURES = { cilium: '1.0.0', coredns: '1.0.0', 'cert-manager': '1.0.0' }

/** Runs steps as the CLI's progress does, recording each title and what the step said while it ran. */
async function runRecorded(steps: Step[], said: string[]): Promise<unknown> {
  try {
    for (const step of steps) {
      said.push(step.title)
      await step.run((line) => said.push(`  ${line}`))
    }
    return undefined
  } catch (err) {
    return err
  }
}

describe('init bring-up: a cluster that does not answer', function () {
  this.timeout(20_000) // helm's real 30 s retry interval must never be reached: sleeps are recorded
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => tmp.cleanup())

  for (const major of HELM_MAJORS)
    it(`helm ${major}: waits for the API by name, says each retry, then fails as upgrade does (exit 3)`, async () => {
      const ws = await makeUpgradeWorkspace(path.join(tmp.dir, 'ws'), FIXTURES)
      const paths = workspacePaths(ws)
      const port = await freePort()
      await writeFile(
        paths.adminConf,
        `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`,
        { mode: 0o600 },
      )
      const slept: number[] = []
      const bringUp = await prepareBringUp(
        {
          workspaceDir: ws,
          config: await loadConfig(paths.config),
          state: await loadState(paths.state),
          kubeconfig: paths.adminConf,
          conformance: false,
          helmTimeoutMs: 60_000,
          wait: true,
        },
        {
          runner: createRunner(),
          env: await realHelmEnv(tmp.dir, major),
          sleep: async (ms) => void slept.push(ms),
        },
      )
      const said: string[] = []
      const err = await runRecorded(bringUp.steps, said)

      expect(said[0]).to.equal(`Waiting for the Kubernetes API at https://127.0.0.1:${port} to answer helm`)
      const retries = said.slice(1)
      expect(retries).to.have.length(4)
      retries.forEach((line, i) =>
        expect(line).to.match(
          new RegExp(`^  attempt ${i + 1} of 5 failed: .*connection refused.*; trying again in ${2 ** i}s$`),
        ),
      )
      expect(slept).to.deep.equal([1000, 2000, 4000, 8000])
      expect(exitCodeOf(err)).to.equal(3)
      expect(chainMessage(err)).to.match(
        /^reading the installed Helm releases \(5 attempts\): helm list exited with code 1: .*cluster unreachable/i,
      )
      expect(bringUp.installed()).to.deep.equal([])
    })
})
