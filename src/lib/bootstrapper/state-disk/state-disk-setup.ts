/**
 * `constellation state-disk setup`, run by systemd before `bootstrap run` on every boot
 * (Constellation's disk-mapper): a disk that is blank, new or marked for reset is formatted with a
 * random key and the node starts fresh; a disk marked initialized belongs to a rebooted node, which
 * gets its key from a join service or the operator's recover, opens the disk and puts its cluster
 * ID back into PCR 15, so that `bootstrap run` finds a bootstrapped node.
 */
import { randomBytes } from 'node:crypto'
import { canonicalDiskUuid } from '../../contract/index.js'
import { CliError } from '../../errors/index.js'
import { deriveClusterId } from '../../kms/index.js'
import { readNodeState } from '../../nodeconfig/index.js'
import type { NodePaths } from '../../paths.js'
import {
  STATE_DISK_TOKEN_TYPE,
  type DiskContent,
  type StateDiskMark,
  type StateDiskMounter,
} from '../../statedisk/index.js'
import { exists, writeFileAtomic, type Logger, writeSecretFile } from '../../system/index.js'
import { acquireDiskKey, type DiskKeyDeps } from './disk-key.js'
import { extendClusterIdPcr, type PcrExtender } from '../node-lock.js'

/** The header operations setup needs (statedisk's CryptsetupDisk). */
export interface SetupDisk {
  readonly device: string
  probe(): Promise<DiskContent>
  format(key: Buffer): Promise<void>
  writeMark(mark: StateDiskMark): Promise<void>
  uuid(): Promise<string>
  opensWith(key: Buffer): Promise<boolean>
}

export interface StateDiskSetupDeps {
  disk: SetupDisk
  mounter: StateDiskMounter
  paths: NodePaths
  /** PCR 15 as the TPM reports it now. */
  readClusterIdPcr: () => Promise<Buffer | undefined>
  tpm: PcrExtender
  /** The rejoin and recovery half (acquireDiskKey), minus what setup fills in itself. */
  diskKey: Omit<DiskKeyDeps, 'diskUuid' | 'opensWith' | 'log' | 'signal'>
  log: Logger
  signal: AbortSignal
  random?: (bytes: number) => Buffer
}

export type SetupOutcome = 'formatted' | 'rejoined' | 'recovered' | 'already-set-up'

const INITIAL_KEY_BYTES = 32

export async function setupStateDisk(deps: StateDiskSetupDeps): Promise<SetupOutcome> {
  const { disk, log } = deps
  const content = await disk.probe()
  if (content.kind === 'foreign')
    throw new CliError(
      `the state disk ${disk.device} is not empty (blkid finds ${content.type}); refusing to format it`,
      {
        hint: `if it is the right disk and may be erased, clear it (wipefs --all ${disk.device}); otherwise fix stateDisk.device in the node config`,
      },
    )
  if (content.kind === 'luks2' && content.mark === undefined)
    throw new CliError(
      `the state disk ${disk.device} is a LUKS2 volume without a ${STATE_DISK_TOKEN_TYPE} token: this tool did not format it; refusing to`,
      {
        hint: `if it may be erased, clear it (cryptsetup erase ${disk.device}, then wipefs --all ${disk.device}); otherwise fix stateDisk.device in the node config`,
      },
    )
  // memory-backed: gone at the next boot, so a second run in this boot cannot format a disk in use
  if (await exists(deps.paths.stateDiskReadyFile)) {
    log.info('The state disk was set up earlier in this boot; nothing to do', { device: disk.device })
    return 'already-set-up'
  }
  const outcome =
    content.kind === 'blank' || content.mark !== 'initialized'
      ? await formatFresh(deps, content.kind === 'blank' ? 'blank' : content.mark!)
      : await reopen(deps)
  await writeFileAtomic(deps.paths.stateDiskReadyFile, `${outcome}\n`)
  return outcome
}

async function formatFresh(deps: StateDiskSetupDeps, was: 'blank' | StateDiskMark): Promise<SetupOutcome> {
  const key = (deps.random ?? randomBytes)(INITIAL_KEY_BYTES)
  // memory-backed on a node (/run), and never anywhere else: a reboot before init or join loses it,
  // and the next boot formats again
  await writeSecretFile(deps.paths.stateDiskInitialKeyFile, key, 'replace')
  await deps.disk.format(key)
  await deps.disk.writeMark('new')
  await mount(deps, key, true)
  deps.log.info('State disk formatted with a random key; the node can be initialized or join', {
    device: deps.disk.device,
    was,
  })
  return 'formatted'
}

async function reopen(deps: StateDiskSetupDeps): Promise<SetupOutcome> {
  const diskUuid = canonicalDiskUuid(await deps.disk.uuid())
  const keys = await acquireDiskKey({
    ...deps.diskKey,
    diskUuid,
    opensWith: (key) => deps.disk.opensWith(key),
    log: deps.log,
    signal: deps.signal,
  })
  await mount(deps, keys.diskKey, false)
  const state = await readNodeState(deps.paths)
  const clusterId = deriveClusterId(keys.measurementSecret, state.measurementSalt)
  // extended once per boot: a run that stopped after this step must not extend it a second time
  const pcr = await deps.readClusterIdPcr()
  if (!pcr?.some((b) => b !== 0)) await extendClusterIdPcr(deps.tpm, clusterId)
  deps.log.info('State disk opened; PCR 15 carries the cluster ID again', {
    diskUUID: diskUuid,
    role: state.role,
    source: keys.source,
    clusterId: clusterId.toString('hex'),
  })
  return keys.source === 'recovery' ? 'recovered' : 'rejoined'
}

async function mount(deps: StateDiskSetupDeps, key: Buffer, fresh: boolean): Promise<void> {
  try {
    await deps.mounter.mount(deps.disk.device, key, { fresh })
  } catch (cause) {
    throw new CliError(
      `mapping and mounting the state disk ${deps.disk.device} at ${deps.paths.stateDir} failed`,
      {
        cause,
        hint: 'the log says which step; this needs device-mapper (dm-crypt) and root',
      },
    )
  }
}
