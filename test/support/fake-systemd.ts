/**
 * A node's systemd for tests: the project's real unit files (templates/systemd), rendered for a test
 * node's config and root, behind the FakeSystemctl TEST DOUBLE (simulator/systemctl-fake). A
 * process under test that runs `systemctl start` finds the fake first on its PATH; the services it
 * starts are the real `constellation keyservice`/`joinservice` processes, stopped by `stop()`.
 */
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { kubeletUnitFor, simulatorPaths } from '../../src/lib/simulator/index.js'
import { alive } from '../../src/lib/mini/daemons.js'
import { CLI_ARGS, REPO_ROOT } from './cli.js'

const FAKE_SYSTEMCTL_DIR = simulatorPaths(REPO_ROOT).systemctlFakeDir
const UNIT_TEMPLATES = path.join(REPO_ROOT, 'templates/systemd')
/** The machine image's kubelet unit, as a stand-in (see the file). */
const KUBELET_UNIT = simulatorPaths(REPO_ROOT).kubeletUnit
const STOP_GRACE_MS = 15_000

export interface FakeSystemd {
  /** For the process that calls systemctl: the fake first on PATH, and where it finds units. */
  env: NodeJS.ProcessEnv
  /** What a unit's process wrote (its journal). */
  journal(unit: string): Promise<string>
  /** The pid of a started unit, undefined if it was never started. */
  pid(unit: string): Promise<number | undefined>
  /** SIGTERM to every started unit, SIGKILL after a grace; resolves once all are gone (as at a shutdown). */
  stop(): Promise<void>
}

export interface FakeSystemdOptions {
  /** A folder of the test's own (created here). */
  dir: string
  /** The node config the units pass with --config. */
  nodeConfig: string
  /** The node's root: the units' node paths (/var/config/…) hang off it. */
  root: string
  /** Extra environment for the services (e.g. the kubeadm fake's). */
  serviceEnv?: NodeJS.ProcessEnv
}

export async function installFakeSystemd(opts: FakeSystemdOptions): Promise<FakeSystemd> {
  const unitDir = path.join(opts.dir, 'units')
  const stateDir = path.join(opts.dir, 'state')
  await mkdir(unitDir, { recursive: true })
  await mkdir(stateDir, { recursive: true })
  // /usr/bin/constellation of the units: the CLI under test
  const launcher = path.join(opts.dir, 'constellation')
  const cli = [process.execPath, ...CLI_ARGS].map((a) => `'${a}'`).join(' ')
  await writeFile(launcher, `#!/bin/sh\nexec ${cli} "$@"\n`)
  await chmod(launcher, 0o755)
  for (const unit of await readdir(UNIT_TEMPLATES)) {
    const text = (await readFile(path.join(UNIT_TEMPLATES, unit), 'utf8'))
      .replaceAll('/usr/bin/constellation', launcher)
      .replaceAll('/etc/constellation/node-config.yaml', opts.nodeConfig)
      .replaceAll('/var/config/', path.join(opts.root, 'var/config') + '/')
    await writeFile(path.join(unitDir, unit), text)
  }
  await writeFile(path.join(unitDir, 'kubelet.service'), await kubeletUnitFor(KUBELET_UNIT, opts.root))
  const pid = async (unit: string) => {
    const text = await readFile(path.join(stateDir, `${unit}.pid`), 'utf8').catch(() => undefined)
    return text === undefined ? undefined : Number(text)
  }
  return {
    env: {
      ...opts.serviceEnv,
      PATH: `${FAKE_SYSTEMCTL_DIR}:${process.env.PATH ?? ''}`,
      SYSTEMCTL_FAKE_UNIT_DIR: unitDir,
      SYSTEMCTL_FAKE_STATE_DIR: stateDir,
    },
    journal: (unit) => readFile(path.join(stateDir, `${unit}.log`), 'utf8').catch(() => ''),
    pid,
    async stop() {
      // a node that never started has no state folder: nothing to stop
      const entries = await readdir(stateDir).catch(() => [] as string[])
      const units = entries.filter((f) => f.endsWith('.pid')).map((f) => f.slice(0, -4))
      await Promise.all(units.map(async (unit) => stopProcess((await pid(unit)) ?? 0)))
      // the journals stay (a test reads them across a reboot); the node's temp dir goes with the test
      await Promise.all(units.map((unit) => rm(path.join(stateDir, `${unit}.pid`), { force: true })))
    },
  }
}

async function stopProcess(pid: number): Promise<void> {
  if (!alive(pid)) return
  process.kill(pid, 'SIGTERM')
  const deadline = Date.now() + STOP_GRACE_MS
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  if (alive(pid)) process.kill(pid, 'SIGKILL')
}
