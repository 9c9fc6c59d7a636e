/**
 * A mini node's supervisor (its "systemd") with real processes: unit files in a temp folder, a
 * real swtpm, the simulator's systemctl asking it through its socket. What a machine's systemd does
 * for the keys our units use: order, conditions, Requires=, Restart=, start limits, and a power-off
 * that stops every unit and shuts the TPM down (TPM2_Shutdown: the next startup counts nothing).
 */
import { execFile } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { alive, killGroup, markedProcesses, spawnInGroup, stopMarked } from '../../src/lib/mini/daemons.js'
import { readBootStatus, type BootStatus, type MachineSpec } from '../../src/lib/mini/machine.js'
import { NodeSupervisor, type SupervisorDeps } from '../../src/lib/mini/supervisor.js'
import { simulatorPaths } from '../../src/lib/simulator/index.js'
import { createLogger, sleepMs } from '../../src/lib/system/index.js'
import {
  openSwtpmSocket,
  quote,
  readPcrs,
  shutdownTpm,
  withTpm,
  type OpenTpm,
} from '../../src/lib/tpm/index.js'
import { bootPcrs, launcherScript, measureNodeBoot } from '../../src/lib/mini/measured-boot.js'
import { readDictionaryAttackState } from '../../src/lib/tpm/dictionary-attack.js'
import { createPrimary, flushContext } from '../../src/lib/tpm/commands.js'
import { akTemplate } from '../../src/lib/tpm/ak.js'
import { TPM_RH, TPMA_OBJECT } from '../../src/lib/tpm/constants.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const run = promisify(execFile)
const MARKER = 'CONSTELL_TEST_SUPERVISED'
const SYSTEMCTL = path.join(simulatorPaths(REPO_ROOT).systemctlFakeDir, 'systemctl')

/** A DA-protected key's use: counted at the next startup unless the TPM was shut down in order. */
async function useDaProtectedKey(open: OpenTpm): Promise<void> {
  const template = akTemplate()
  template.writeUInt32BE(template.readUInt32BE(4) & ~TPMA_OBJECT.noDA, 4)
  await withTpm(open, async (t) => {
    const key = await createPrimary(t, TPM_RH.ENDORSEMENT, template)
    await quote(t, key.handle, Buffer.alloc(32), [0]).finally(() => flushContext(t, key.handle))
  })
}

describe('mini: a node supervisor (its systemd), real processes and swtpm', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let machine: MachineSpec
  let mark: string
  let supervisor: NodeSupervisor
  let deps: SupervisorDeps
  let journal: string[]

  const unit = (name: string, text: string) => writeFile(path.join(machine.unitDir, name), text)
  const status = async (): Promise<BootStatus> => (await readBootStatus(machine.status))!
  const unitState = async (name: string) => (await status()).units[name]?.state
  const until = (name: string, state: string) =>
    eventually(`${name} ${state}`, async () => ((await unitState(name)) === state ? true : undefined), 20_000)

  beforeEach(async () => {
    tmp = await makeTempDir('constell-supervisor-')
    const dir = tmp.dir
    mark = `${process.pid}-${Date.now()}`
    machine = {
      node: 'node-0',
      tpm: {
        stateDir: path.join(dir, 'tpm'),
        socket: path.join(dir, 'swtpm.sock'),
        ctrlSocket: path.join(dir, 'swtpm-ctrl.sock'),
        log: path.join(dir, 'swtpm.log'),
      },
      unitDir: path.join(dir, 'units'),
      journalDir: path.join(dir, 'journal'),
      unitLogs: { 'first.service': path.join(dir, 'first.log') },
      status: path.join(dir, 'boot.json'),
      control: path.join(dir, 'systemd.sock'),
      volatile: [path.join(dir, 'run')],
    }
    for (const d of [machine.tpm.stateDir, machine.unitDir, machine.journalDir, path.join(dir, 'run')])
      await mkdir(d, { recursive: true, mode: 0o700 })
    await writeFile(path.join(dir, 'run', 'left-from-last-boot'), '')
    journal = []
    deps = {
      spawn: spawnInGroup,
      killGroup,
      sweep: (except) => stopMarked(MARKER, mark, 2_000, except),
      tpmAccepts: async (socket) => withTpm(openSwtpmSocket(socket), async () => true).catch(() => false),
      shutdownTpm: (socket) => shutdownTpm(openSwtpmSocket(socket)),
      sleep: (ms) => sleepMs(ms),
      env: { ...process.env, [MARKER]: mark, SYSTEMCTL_FAKE_SUPERVISOR: machine.control },
      log: createLogger({ format: 'json', write: (line) => journal.push(line) }),
      bootId: 'boot-1',
      pid: process.pid,
    }
    supervisor = new NodeSupervisor(machine, deps)
  })
  afterEach(async () => {
    await supervisor.stop()
    await stopMarked(MARKER, mark, 2_000)
    await tmp.cleanup()
  })

  it('boots the enabled units in order, skips what its condition rules out, restarts on failure, and starts a unit systemctl asks for', async () => {
    const dir = tmp.dir
    // first: a oneshot that takes a moment; second waits for it (After=) and needs it (Requires=)
    await unit(
      'first.service',
      `[Unit]\nBefore=second.service\n[Service]\nType=oneshot\nExecStart=${path.join(dir, 'first.sh')}\nRemainAfterExit=yes\n[Install]\nWantedBy=multi-user.target\n`,
    )
    await writeFile(path.join(dir, 'first.sh'), '#!/bin/sh\nsleep 0.3\necho first done\n', { mode: 0o755 })
    await unit(
      'second.service',
      `[Unit]\nAfter=first.service\nRequires=first.service\n[Service]\nExecStart=${path.join(dir, 'second.sh')}\nUMask=0077\n[Install]\nWantedBy=multi-user.target\n`,
    )
    // second records whether first was done when it started, and the umask it runs under
    await writeFile(
      path.join(dir, 'second.sh'),
      `#!/bin/sh\ngrep -q 'first done' ${path.join(dir, 'first.log')} && echo after-first; umask\nexec sleep 60\n`,
      { mode: 0o755 },
    )
    // flaky fails its first start, then runs
    await unit(
      'flaky.service',
      `[Service]\nExecStart=${path.join(dir, 'flaky.sh')}\nRestart=on-failure\nRestartSec=100ms\n[Install]\nWantedBy=multi-user.target\n`,
    )
    await writeFile(
      path.join(dir, 'flaky.sh'),
      `#!/bin/sh\nif [ ! -e ${dir}/flaky-ran ]; then touch ${dir}/flaky-ran; exit 3; fi\nexec sleep 60\n`,
      { mode: 0o755 },
    )
    await unit(
      'conditional.service',
      `[Unit]\nConditionPathExists=${dir}/absent\n[Service]\nExecStart=/bin/sleep 60\n[Install]\nWantedBy=multi-user.target\n`,
    )
    // not enabled: only systemctl start runs it
    await unit('on-demand.service', `[Service]\nExecStart=/bin/sleep 60\n`)

    await supervisor.start()
    expect((await status()).bootId).to.equal('boot-1')
    expect((await status()).tpm.state).to.equal('up')
    await until('second.service', 'running')
    await until('flaky.service', 'running')
    expect(await unitState('first.service')).to.equal('exited')
    expect(await unitState('conditional.service')).to.equal('skipped')
    expect(await unitState('on-demand.service')).to.equal('inactive')
    expect((await status()).units['flaky.service']?.restarts).to.equal(1)
    await eventually('second wrote its log', async () =>
      (await readFile(path.join(machine.journalDir, 'second.service.log'), 'utf8').catch(() => '')).includes(
        '0077',
      )
        ? true
        : undefined,
    )
    expect(await readFile(path.join(machine.journalDir, 'second.service.log'), 'utf8')).to.equal(
      'after-first\n0077\n',
    )
    await expect(readFile(path.join(dir, 'run', 'left-from-last-boot')), '/run is emptied at power-on').to.be
      .rejected

    // the simulator's systemctl asks the supervisor; it answers as systemctl does
    const systemctl = (...args: string[]) =>
      run(SYSTEMCTL, args, { env: { ...process.env, SYSTEMCTL_FAKE_SUPERVISOR: machine.control } })
    await systemctl('start', 'on-demand.service', 'second.service')
    expect(await unitState('on-demand.service')).to.equal('running')
    const absent = await systemctl('start', 'absent.service').catch(
      (err: { code: number; stderr: string }) => err,
    )
    expect(absent).to.include({ code: 5 })
    expect((absent as { stderr: string }).stderr).to.include('Unit absent.service not found.')
    // restart: the running process stops, a new one starts (how an upgraded kubelet comes into use)
    const before = (await status()).units['on-demand.service']?.pid
    await systemctl('restart', 'on-demand.service')
    const after = (await status()).units['on-demand.service']
    expect(after?.state).to.equal('running')
    expect(after?.pid).to.be.a('number').and.not.equal(before)
    expect(alive(before ?? 0), 'the old process is gone').to.equal(false)
    const restartAbsent = await systemctl('restart', 'absent.service').catch(
      (err: { code: number; stderr: string }) => err,
    )
    expect(restartAbsent).to.include({ code: 5 })
    const unknownVerb = await systemctl('stop', 'on-demand.service').catch(
      (err: { code: number; stderr: string }) => err,
    )
    expect((unknownVerb as { stderr: string }).stderr).to.include(
      'only "start" and "restart" are implemented',
    )

    // a second supervisor of the same node refuses to start, and leaves the first alone
    const second = new NodeSupervisor(machine, { ...deps, bootId: 'boot-2' })
    await expect(second.start()).to.be.rejectedWith(/another process listens on/)
    expect(await unitState('second.service')).to.equal('running')

    const pids = await markedProcesses(MARKER, mark)
    expect(pids.length, 'second, flaky, on-demand and swtpm').to.be.at.least(4)
    await supervisor.stop()
    expect(pids.filter(alive), 'every process of the node stopped').to.deep.equal([])
    const off = await status()
    expect(off.state).to.equal('off')
    expect(off.tpm.state).to.equal('shut down')
    expect(Object.values(off.units).map((u) => u.state)).to.not.include('running')
    await supervisor.stop() // twice: nothing more to do
  })

  it('a unit whose start job fails fails the units that require it; a crash loop hits the start limit', async () => {
    await unit(
      'setup.service',
      `[Service]\nType=oneshot\nExecStart=/bin/false\n[Install]\nWantedBy=multi-user.target\n`,
    )
    await unit(
      'needs-setup.service',
      `[Unit]\nAfter=setup.service\nRequires=setup.service\n[Service]\nExecStart=/bin/sleep 60\n[Install]\nWantedBy=multi-user.target\n`,
    )
    await unit(
      'crashes.service',
      `[Service]\nExecStart=/bin/false\nRestart=always\nRestartSec=10ms\n[Install]\nWantedBy=multi-user.target\n`,
    )
    await unit('broken.service', `[Service]\nExecStart=/bin/sleep 60\nMemoryMax=1G\n`)
    await supervisor.start()
    await until('needs-setup.service', 'failed')
    expect((await status()).units['setup.service']).to.include({ state: 'failed', message: 'exited 1' })
    expect((await status()).units['needs-setup.service']?.message).to.equal(
      'a unit it requires failed: setup.service',
    )
    await until('crashes.service', 'failed')
    expect((await status()).units['crashes.service']?.message).to.match(
      /^start limit hit: 5 starts within 10 s/,
    )
    await expect(supervisor.startUnits(['broken.service'])).to.be.rejectedWith(
      /Job for broken.service failed: its unit file is refused: .*broken.service:3: "MemoryMax=1G": mini's systemd does not implement this in \[Service\]/,
    )
  })

  describe('measured boot', () => {
    const cli = ['/usr/bin/node', '/opt/constellation/bin/run.js']
    const measured = async (failWith?: Error) => {
      const dir = tmp.dir
      await writeFile(path.join(dir, 'constellation'), launcherScript(cli))
      const eventLog = path.join(dir, 'root/sys/kernel/security/tpm0/binary_bios_measurements')
      machine.boot = { launcher: path.join(dir, 'constellation'), unitTemplates: machine.unitDir, eventLog }
      // the unit records whether the log was there when it started: measured before any unit runs
      await unit(
        'first.service',
        `[Service]\nExecStart=/bin/sh -c 'test -s ${eventLog} && echo log-present; exec sleep 60'\n[Install]\nWantedBy=multi-user.target\n`,
      )
      deps.measureBoot = failWith
        ? () => Promise.reject(failWith)
        : (boot, socket) => measureNodeBoot(openSwtpmSocket(socket), boot)
      supervisor = new NodeSupervisor(machine, deps)
      await supervisor.start()
    }

    it('extends the PCRs mini expects and writes the log before the first unit starts', async () => {
      await measured()
      await until('first.service', 'running')
      await eventually('first.service saw the log', async () =>
        (await readFile(path.join(tmp.dir, 'first.log'), 'utf8')).includes('log-present') ? true : undefined,
      )
      const want = await bootPcrs(cli, machine.unitDir)
      expect(await readPcrs(openSwtpmSocket(machine.tpm.socket), [...want.keys()])).to.deep.equal(want)
    })

    it('a boot that cannot be measured starts no unit', async () => {
      await measured(new Error('TPM gone'))
      expect((await status()).units['first.service']?.state).to.not.equal('running')
      expect(journal.join('\n')).to.match(/The measured boot failed; nothing boots.*TPM gone/)
    })
  })

  it('powered off in order, the TPM counts no dictionary-attack failure; without the shutdown it would', async () => {
    await supervisor.start()
    const open = openSwtpmSocket(machine.tpm.socket)
    await useDaProtectedKey(open)
    await supervisor.stop()
    expect(journal.join('\n')).to.include('TPM2_Shutdown sent')
    // the next boot's TPM: the same state, a swtpm of the test's own
    const startSwtpm = () =>
      spawnInGroup({
        argv: [
          'swtpm',
          'socket',
          '--tpm2',
          '--server',
          `type=unixio,path=${machine.tpm.socket},mode=0600`,
          '--tpmstate',
          `dir=${machine.tpm.stateDir}`,
          '--flags',
          'not-need-init,startup-clear',
        ],
        env: process.env,
        logFile: machine.tpm.log,
      })
    const swtpm = startSwtpm()
    try {
      const state = await eventually('the TPM again', () =>
        withTpm(open, readDictionaryAttackState).catch(() => undefined),
      )
      expect(state).to.include({ lockoutCounter: 0, inLockout: false })
      // the control: the same use, then a power cut, counts one
      await useDaProtectedKey(open)
      killGroup(swtpm.pid, 'SIGKILL')
      await swtpm.exited
      const again = startSwtpm()
      try {
        const counted = await eventually('the TPM after a power cut', () =>
          withTpm(open, readDictionaryAttackState).catch(() => undefined),
        )
        expect(counted.lockoutCounter).to.equal(1)
      } finally {
        killGroup(again.pid, 'SIGKILL')
        await again.exited
      }
    } finally {
      killGroup(swtpm.pid, 'SIGKILL')
      await swtpm.exited
    }
  })
})
