/**
 * state-disk setup on real parts (cryptsetup on image files, swtpm for PCR 15) with the mount
 * boundary's RecordingMounter: which disks it formats, which it refuses, and how a rebooted node
 * gets its key. The join services and the recovery endpoint are stand-ins here that hand setup a
 * ticket or a master secret; test/e2e/node-lifecycle.test.ts runs the real ones. The mapping and
 * mounting behind the boundary are real in test/e2e/mini-vm.test.ts (a QEMU VM): here only the
 * decisions above it are under test, with the real cryptsetup on each header.
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFile, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import {
  CLUSTER_ID_PCR,
  setupStateDisk,
  type RecoveryEndpoint,
  type RejoinTicketRequester,
} from '../../../src/lib/bootstrapper/index.js'
import { type StateDiskSetupDeps } from '../../../src/lib/bootstrapper/state-disk/state-disk-setup.js'
import { ClusterKms, deriveClusterId } from '../../../src/lib/kms/index.js'
import { writeNodeState } from '../../../src/lib/nodeconfig/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { CryptsetupDisk, RecoveryRefusedError } from '../../../src/lib/statedisk/index.js'
import { createLogger, createRunner } from '../../../src/lib/system/index.js'
import { extendPcr, readPcrs } from '../../../src/lib/tpm/index.js'
import { expect } from '../../support/chai.js'
import { createBlankImage, TEST_PBKDF } from '../../support/luks-image.js'
import { RecordingMounter } from '../../support/recording-mounter.js'
import { startSwtpm, type SwtpmHandle } from '../../support/swtpm.js'
import { makeTempDir } from '../../support/temp.js'

const MASTER = { key: randomBytes(32), salt: randomBytes(32) }
const MEASUREMENT_SALT = randomBytes(32)
const FAST_RETRY = { initialDelayMs: 20, maxDelayMs: 50, jitter: 0 }
const unavailable = () =>
  Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED'), { code: grpc.status.UNAVAILABLE })

describe('state-disk setup (real cryptsetup and swtpm; stand-in join services and recovery endpoint)', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  let tpm: SwtpmHandle
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    tpm = await startSwtpm()
  })
  afterEach(async () => {
    await tpm.stop()
    await cleanup()
  })

  interface Harness {
    deps: StateDiskSetupDeps
    disk: CryptsetupDisk
    mounter: RecordingMounter
    lines: string[]
    /** The node's check of a master secret, as the recovery endpoint would call it. */
    recover: () => Promise<(master: { key: Buffer; salt: Buffer }) => Promise<void>>
    recoveryStops: () => number
    stop: AbortController
  }

  async function harness(
    image: string,
    opts: { rejoin?: RejoinTicketRequester; endpoints?: string[] } = {},
  ): Promise<Harness> {
    const paths = nodePaths(path.join(dir, 'root'))
    const disk = new CryptsetupDisk(image, createRunner(), paths.runtimeDir, TEST_PBKDF)
    const mounter = new RecordingMounter(paths)
    const lines: string[] = []
    let stops = 0
    let offered: ((recover: (master: { key: Buffer; salt: Buffer }) => Promise<void>) => void) | undefined
    const recoverFn = new Promise<(master: { key: Buffer; salt: Buffer }) => Promise<void>>(
      (resolve) => (offered = resolve),
    )
    const stop = new AbortController()
    const deps: StateDiskSetupDeps = {
      disk,
      mounter,
      paths,
      readClusterIdPcr: async () => (await readPcrs(tpm.open, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR),
      tpm: { extendPcr: (index, digest) => extendPcr(tpm.open, index, digest) },
      diskKey: {
        endpoints: opts.endpoints ?? [],
        requestRejoinTicket: opts.rejoin ?? (() => Promise.reject(unavailable())),
        recoveryEndpoint: (recover): RecoveryEndpoint => ({
          start: () => {
            offered?.(recover)
            return Promise.resolve('127.0.0.1:9999')
          },
          stop: () => Promise.resolve(void stops++),
        }),
        retry: FAST_RETRY,
      },
      log: createLogger({ format: 'json', write: (l) => lines.push(l) }),
      signal: stop.signal,
    }
    return { deps, disk, mounter, lines, recover: () => recoverFn, recoveryStops: () => stops, stop }
  }

  /** A disk as init leaves it: re-keyed with the cluster's key, marked initialized, node state written. */
  async function initializedDisk(): Promise<{ image: string; uuid: string; kms: ClusterKms }> {
    const image = await createBlankImage(dir)
    const h = await harness(image)
    expect(await setupStateDisk(h.deps)).to.equal('formatted')
    const uuid = (await h.disk.uuid()).toLowerCase()
    const kms = new ClusterKms(MASTER.key, MASTER.salt)
    await h.disk.changeKey(h.deps.paths.stateDiskInitialKeyFile, kms.diskKey(uuid))
    await h.disk.writeMark('initialized')
    await writeNodeState(h.deps.paths, { role: 'worker', measurementSalt: MEASUREMENT_SALT, diskUuid: uuid })
    // a reboot: the memory-backed /run is empty again (the swtpm keeps PCR 15 at zero: it never changed)
    await rm(h.deps.paths.runtimeDir, { recursive: true, force: true })
    await rm(h.deps.paths.stateDiskInitialKeyFile, { force: true })
    return { image, uuid, kms }
  }

  const clusterPcr = (kms: ClusterKms) => {
    const clusterId = deriveClusterId(kms.measurementSecret(), MEASUREMENT_SALT)
    const digest = createHash('sha256').update(clusterId).digest()
    return createHash('sha256').update(Buffer.alloc(32)).update(digest).digest()
  }
  const pcr15 = async () => (await readPcrs(tpm.open, [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR)

  it('a blank disk: formatted with a random key kept 0600 in the runtime dir, marked new, mounted fresh; once per boot', async () => {
    const h = await harness(await createBlankImage(dir))
    expect(await setupStateDisk(h.deps)).to.equal('formatted')
    const keyFile = h.deps.paths.stateDiskInitialKeyFile
    expect((await stat(keyFile)).mode & 0o777).to.equal(0o600)
    const key = await readFile(keyFile)
    expect(key).to.have.length(32)
    expect(await h.disk.opensWith(key)).to.equal(true)
    expect(await h.disk.probe()).to.deep.equal({ kind: 'luks2', mark: 'new' })
    expect(h.mounter.mounts).to.deep.equal([{ device: h.disk.device, fresh: true }])
    const uuid = await h.disk.uuid()
    // run again in the same boot: nothing is formatted again
    expect(await setupStateDisk(h.deps)).to.equal('already-set-up')
    expect(await h.disk.uuid()).to.equal(uuid)
    expect(h.lines.join('\n')).not.to.include(key.toString('base64'))
  })

  it('a disk marked for reset (init failed past the lock): formatted anew, the old key and UUID gone', async () => {
    const { image, uuid, kms } = await initializedDisk()
    const h = await harness(image)
    await h.disk.writeMark('reset')
    expect(await setupStateDisk(h.deps)).to.equal('formatted')
    expect((await h.disk.uuid()).toLowerCase()).not.to.equal(uuid)
    expect(await h.disk.opensWith(kms.diskKey(uuid))).to.equal(false)
    expect(await h.disk.probe()).to.deep.equal({ kind: 'luks2', mark: 'new' })
    // the state the failed init left is gone with the old file system
    await expect(stat(h.deps.paths.nodeStateFile)).to.be.rejected
  })

  it('refuses a disk with a file system, or a LUKS2 volume it did not format, and leaves it as it was', async () => {
    const ext4 = await createBlankImage(dir)
    await createRunner().run('mkfs.ext4', ['-q', ext4])
    const before = await readFile(ext4)
    const h = await harness(ext4)
    await expect(setupStateDisk(h.deps)).to.be.rejectedWith(
      /is not empty \(blkid finds ext4\); refusing to format it/,
    )
    expect((await readFile(ext4)).equals(before)).to.equal(true)

    const foreign = path.join(dir, 'foreign-luks2.img')
    await createRunner().run('truncate', ['-s', '20M', foreign])
    const other = new CryptsetupDisk(foreign, createRunner(), dir, TEST_PBKDF)
    await other.format(randomBytes(32))
    const uuid = await other.uuid()
    const h2 = await harness(foreign)
    await expect(setupStateDisk(h2.deps)).to.be.rejectedWith(/without a constellation-state-disk token/)
    expect(await other.uuid()).to.equal(uuid)
    expect(h.mounter.mounts.concat(h2.mounter.mounts)).to.deep.equal([])
  })

  it('a rebooted node: the disk key from a join service (after one that was down); mounted, PCR 15 set again', async () => {
    const { image, uuid, kms } = await initializedDisk()
    const asked: string[] = []
    const h = await harness(image, {
      endpoints: ['10.0.0.1:30090', '10.0.0.2:30090'],
      rejoin: (endpoint, req) => {
        asked.push(`${endpoint} ${req.diskUuid}`)
        if (endpoint === '10.0.0.1:30090') return Promise.reject(unavailable())
        return Promise.resolve({
          stateDiskKey: kms.diskKey(uuid),
          measurementSecret: kms.measurementSecret(),
        })
      },
    })
    expect(await setupStateDisk(h.deps)).to.equal('rejoined')
    expect(asked).to.deep.equal([`10.0.0.1:30090 ${uuid}`, `10.0.0.2:30090 ${uuid}`])
    expect(h.mounter.mounts).to.deep.equal([{ device: image, fresh: false }])
    expect((await pcr15())?.equals(clusterPcr(kms)), 'PCR 15 is the cluster value').to.equal(true)
    expect(h.recoveryStops()).to.equal(1)
    expect(await h.disk.probe()).to.deep.equal({ kind: 'luks2', mark: 'initialized' })
    // a second run in the same boot leaves PCR 15 alone
    expect(await setupStateDisk(h.deps)).to.equal('already-set-up')
    expect((await pcr15())?.equals(clusterPcr(kms))).to.equal(true)
  })

  it('no join service can help: a wrong master secret is refused with the disk closed, the right one recovers', async () => {
    const { image, kms } = await initializedDisk()
    const keysLogged: string[] = []
    const h = await harness(image, {
      endpoints: ['10.0.0.1:30090'],
      // a join service that answers with a key for another disk: never taken
      rejoin: () =>
        Promise.resolve({ stateDiskKey: randomBytes(32), measurementSecret: kms.measurementSecret() }),
    })
    const setup = setupStateDisk(h.deps)
    const recover = await h.recover()
    const wrong = { key: randomBytes(32), salt: randomBytes(32) }
    keysLogged.push(wrong.key.toString('base64'), MASTER.key.toString('base64'))
    await expect(recover(wrong)).to.be.rejectedWith(
      RecoveryRefusedError,
      /does not open this node's state disk/,
    )
    expect(h.mounter.mounts, 'the disk stays closed').to.deep.equal([])
    expect(await pcr15()).to.deep.equal(Buffer.alloc(32))
    await recover(MASTER)
    expect(await setup).to.equal('recovered')
    expect(h.mounter.mounts).to.deep.equal([{ device: image, fresh: false }])
    expect((await pcr15())?.equals(clusterPcr(kms))).to.equal(true)
    await expect(recover(MASTER)).to.be.rejectedWith(RecoveryRefusedError, /has its disk key already/)
    const log = h.lines.join('\n')
    expect(log).to.include("The join service's disk key does not open this disk")
    for (const secret of keysLogged) expect(log).not.to.include(secret)
  })

  it('stopped while it waits: rejects, stops the recovery endpoint, touches neither the disk nor PCR 15', async () => {
    const { image } = await initializedDisk()
    const h = await harness(image, { endpoints: ['10.0.0.1:30090'] })
    const setup = setupStateDisk(h.deps)
    await h.recover()
    h.stop.abort(new Error('state-disk setup was stopped'))
    await expect(setup).to.be.rejectedWith(/was stopped/)
    expect(h.recoveryStops()).to.equal(1)
    expect(h.mounter.mounts).to.deep.equal([])
    expect(await pcr15()).to.deep.equal(Buffer.alloc(32))
  })
})
