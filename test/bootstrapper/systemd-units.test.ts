/**
 * The node's systemd units (templates/systemd) as systemd reads them: `systemd-analyze verify` (the
 * real parser, from Debian's systemd) must accept every line, and each ExecStart must be a command
 * line the CLI accepts. The end-to-end cluster test runs them through FakeSystemctl.
 */
import { execFile } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { CONTROL_PLANE_UNITS } from '../../src/lib/bootstrapper/control-plane-services.js'
import { kubeletUnitFor } from '../../src/lib/simulator/index.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT, runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

const UNIT_DIR = path.join(REPO_ROOT, 'templates/systemd')
const run = promisify(execFile)

const keysOf = (text: string) =>
  Object.fromEntries(
    text
      .split('\n')
      .filter((l) => /^[A-Za-z]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  )

describe('systemd units', () => {
  let units: string[]
  before(async () => (units = (await readdir(UNIT_DIR)).filter((f) => f.endsWith('.service')).sort()))

  it('ships the state-disk, bootstrapper, key service, join service and upgrade agent units', () => {
    expect(units).to.deep.equal([
      'constellation-bootstrapper.service',
      'constellation-joinservice.service',
      'constellation-keyservice.service',
      'constellation-state-disk.service',
      'constellation-upgrade-agent.service',
    ])
    expect([...CONTROL_PLANE_UNITS].sort()).to.deep.equal(
      units.filter((u) => !/bootstrapper|state-disk|upgrade-agent/.test(u)),
    )
  })

  it('the upgrade agent runs on every node from boot, waits for the node to join, and is let finish a step', async () => {
    const agent = keysOf(await readFile(path.join(UNIT_DIR, 'constellation-upgrade-agent.service'), 'utf8'))
    expect(agent.WantedBy).to.equal('multi-user.target')
    expect(agent.ConditionPathExists).to.equal('/etc/constellation/node-config.yaml')
    expect(agent.Restart).to.equal('on-failure')
    expect(agent.TimeoutStopSec).to.equal('20min')
  })

  it('boot order: the state disk first (it waits for the key of a rebooted node), then the bootstrapper and the services', async () => {
    const unit = async (name: string) => keysOf(await readFile(path.join(UNIT_DIR, name), 'utf8'))
    const disk = await unit('constellation-state-disk.service')
    expect(disk.Type).to.equal('oneshot')
    expect(disk.RemainAfterExit).to.equal('yes')
    expect(disk.TimeoutStartSec).to.equal('infinity')
    expect(disk.Before).to.include('constellation-bootstrapper.service')
    const bootstrapper = await unit('constellation-bootstrapper.service')
    expect(bootstrapper.Requires).to.equal('constellation-state-disk.service')
    expect(bootstrapper.After).to.include('constellation-state-disk.service')
    expect(bootstrapper.FailureAction).to.equal('none')
    // their files live on the state disk
    for (const name of CONTROL_PLANE_UNITS)
      expect((await unit(name)).After, name).to.include('constellation-state-disk.service')
  })

  it('systemd-analyze verify accepts every line (ExecStart pointed at an executable that exists)', async () => {
    const { dir, cleanup } = await makeTempDir()
    try {
      const files = await Promise.all(
        units.map(async (unit) => {
          const text = await readFile(path.join(UNIT_DIR, unit), 'utf8')
          const file = path.join(dir, unit)
          await writeFile(file, text.replaceAll('/usr/bin/constellation', process.execPath))
          return file
        }),
      )
      // the kubelet stand-in FakeSystemctl starts for rebooted nodes must be a unit systemd accepts too
      const kubelet = path.join(dir, 'kubelet.service')
      await writeFile(
        kubelet,
        await kubeletUnitFor(path.join(REPO_ROOT, 'simulator/kubelet-unit/kubelet.service'), dir),
      )
      files.push(kubelet)
      const { stderr } = await run('systemd-analyze', ['verify', '--man=no', ...files])
      expect(stderr).to.equal('')
    } finally {
      await cleanup()
    }
  })

  it('the services restart on failure; state-disk setup and the bootstrapper run once per boot', async () => {
    for (const unit of units) {
      const keys = keysOf(await readFile(path.join(UNIT_DIR, unit), 'utf8'))
      const once = /bootstrapper|state-disk/.test(unit)
      if (once) expect(keys.Restart ?? 'no', unit).to.equal('no')
      else expect(keys.Restart, unit).to.equal('on-failure')
      expect(keys.UMask, unit).to.equal('0077')
    }
  })

  it('each ExecStart is a command line the CLI accepts', async () => {
    for (const unit of units) {
      const [, ...args] = (keysOf(await readFile(path.join(UNIT_DIR, unit), 'utf8')).ExecStart ?? '').split(
        ' ',
      )
      const help = await runCli([...args.filter((a) => !a.startsWith('/') && a !== '--config'), '--help'])
      expect(help.code, `${unit}: ${help.stderr}`).to.equal(0)
      expect(help.stdout, unit).to.include('--config')
    }
  })
})
