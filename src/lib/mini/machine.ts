/**
 * What a mini node's supervisor (its "systemd", supervisor.ts) and the commands that power the node
 * on and off share: the machine it runs (machine.json, written once when the node is provisioned)
 * and the boot status it keeps (boot.json, rewritten on every change, read by whoever waits).
 */
import { readFile } from 'node:fs/promises'
import type { MachineBoot } from './measured-boot.js'
import { readTextIfPresent, writeSecretFile } from '../system/index.js'

/** The supervisor's own process carries this marker (its children do not): `mini reboot` finds it by it. */
export const SUPERVISOR_MARKER = 'CONSTELL_MINI_SUPERVISOR'
/** Set for every process of a supervised node: the simulator's systemctl asks the supervisor there. */
export const SYSTEMCTL_SOCKET_ENV = 'SYSTEMCTL_FAKE_SUPERVISOR'

export interface MachineSpec {
  node: string
  tpm: { stateDir: string; socket: string; ctrlSocket: string; log: string }
  /** The node's unit files (rendered from templates/systemd, the simulator's and mini's own). */
  unitDir: string
  /** A unit's output goes to unitLogs[unit], else to journalDir/<unit>.log. */
  journalDir: string
  unitLogs: Record<string, string>
  /** boot.json */
  status: string
  /** The unix socket systemctl talks to (0600 in the node's 0700 folder). */
  control: string
  /** Memory-backed folders (/run): emptied at power-on. */
  volatile: string[]
  /**
   * A confidential-VM node: the stand-in that serves its hardware reports at a configfs-tsm
   * directory, signed by the cluster's stand-in AMD or Intel (no CVM hardware exists here).
   */
  cvm?: MachineCvm
  /** What its boot measures into the TPM before any unit starts (absent on nodes provisioned before). */
  boot?: MachineBoot
}

export interface MachineCvm {
  kind: 'snp' | 'tdx'
  /** What the node reads as /sys/kernel/config/tsm/report. */
  tsmDir: string
  /** The stand-in vendor's keys (cvm-standin's save format). */
  standInDir: string
}

export const UNIT_STATES = [
  /** Queued behind a unit it is ordered after. */
  'waiting',
  /** A oneshot unit's process runs (its start job waits for it). */
  'starting',
  'running',
  /** Done and still active (RemainAfterExit=yes). */
  'exited',
  'restarting',
  /** Not running, after a clean end or a stop. */
  'inactive',
  /** A ConditionPathExists= failed: skipped, which is not a failure. */
  'skipped',
  'failed',
] as const
export type UnitState = (typeof UNIT_STATES)[number]

export interface UnitStatus {
  state: UnitState
  pid?: number
  exitCode?: number | null
  signal?: string | null
  restarts: number
  /** Why it failed or was skipped. */
  message?: string
  since: string
}

export interface BootStatus {
  bootId: string
  supervisorPid: number
  /** booting: its boot units are being started; up: they all were; off: powered off in order. */
  state: 'booting' | 'up' | 'stopping' | 'off'
  tpm: { state: 'starting' | 'up' | 'failed' | 'shut down' | 'off'; message?: string }
  units: Record<string, UnitStatus>
  updatedAt: string
}

export async function readMachineSpec(file: string): Promise<MachineSpec> {
  return parseJson(file, await readFile(file, 'utf8')) as MachineSpec
}

/** The node's boot status, or undefined before its supervisor wrote one (or while it is gone). */
export async function readBootStatus(file: string): Promise<BootStatus | undefined> {
  const text = await readTextIfPresent(file)
  if (text === undefined) return undefined
  const status = parseJson(file, text) as Partial<BootStatus>
  if (typeof status.bootId !== 'string' || typeof status.units !== 'object' || !status.tpm)
    throw new Error(`${file} is not a node's boot status`)
  return status as BootStatus
}

export const writeBootStatus = (file: string, status: BootStatus) =>
  writeSecretFile(file, JSON.stringify(status, null, 2) + '\n', 'replace')

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (cause) {
    throw new Error(`${file} is not JSON`, { cause })
  }
}
