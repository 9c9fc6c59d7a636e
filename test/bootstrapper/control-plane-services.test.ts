import path from 'node:path'
import { startControlPlaneServices } from '../../src/lib/bootstrapper/control-plane-services.js'
import { CliError } from '../../src/lib/errors/index.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { spyingRunner } from '../support/runner.js'
import { makeTempDir } from '../support/temp.js'

/** The systemctl a node runs, as the FakeSystemctl test double (simulator/systemctl-fake). */
const fakeSystemctlEnv = (unitDir: string, stateDir: string) => ({
  PATH: `${path.join(REPO_ROOT, 'simulator/systemctl-fake')}:${process.env.PATH ?? ''}`,
  SYSTEMCTL_FAKE_UNIT_DIR: unitDir,
  SYSTEMCTL_FAKE_STATE_DIR: stateDir,
})

describe('starting the control-plane services', () => {
  it('starts the key and join service units in one systemctl call', async () => {
    const calls: string[][] = []
    const { dir, cleanup } = await makeTempDir()
    try {
      // units whose condition fails are skipped by systemd, so nothing really starts here
      const units = path.join(REPO_ROOT, 'templates/systemd')
      const runner = spyingRunner(
        (file, args) => void calls.push([file, ...args]),
        fakeSystemctlEnv(units, dir),
      )
      await startControlPlaneServices(runner, createLogger({ format: 'json', write: () => {} }))
      expect(calls).to.deep.equal([
        ['systemctl', 'start', 'constellation-keyservice.service', 'constellation-joinservice.service'],
      ])
    } finally {
      await cleanup()
    }
  })

  it('a failed start is an error naming the units and how to see why', async () => {
    const { dir, cleanup } = await makeTempDir()
    try {
      const runner = spyingRunner(() => {}, fakeSystemctlEnv(dir, dir)) // no unit files: "not found", exit 5
      const err = await startControlPlaneServices(
        runner,
        createLogger({ format: 'json', write: () => {} }),
      ).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(CliError)
      expect((err as CliError).message).to.include('starting its key and join services failed')
      expect((err as CliError).hint).to.include('systemctl status constellation-keyservice.service')
      expect(String((err as Error).cause)).to.include('Unit constellation-keyservice.service not found')
    } finally {
      await cleanup()
    }
  })
})
