import { createHash } from 'node:crypto'
import { access, readFile, readlink, rm, stat, symlink, writeFile, cp } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { expect } from '../support/chai.js'
import { clusterIdPcrValue, parseJoinConfig } from '../../src/lib/attestation/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import type { JoinClient } from '../../src/lib/bootstrapper/index.js'
import { CryptsetupDisk } from '../../src/lib/statedisk/index.js'
import { loadConfig } from '../../src/lib/config/index.js'
import { chainMessage, CliError } from '../../src/lib/errors/index.js'
import { initCluster } from '../../src/lib/init/index.js'
import { ClusterKms } from '../../src/lib/kms/index.js'
import { parseMasterSecret } from '../../src/lib/kms/master-secret.js'
import { nodePaths, workspacePaths } from '../../src/lib/paths.js'
import { createRunner, runStepsSilently } from '../../src/lib/system/index.js'
import { extendPcr } from '../../src/lib/tpm/index.js'
import { readComponentsFile } from '../../src/lib/versions/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { freePort } from '../support/ports.js'
import { setClusterEndpoint, startLocalNode, type LocalNode } from '../support/local-node.js'
import { pcr15, startNode, type RunningNode } from '../support/init-client.js'
import { NodeBootstrappedError } from '../../src/lib/bootstrapper/daemon.js'
import { silentLogger } from '../../src/lib/system/logger.js'

/** The daemon reads the state disk's UUID (luksUUID) once it listens; that read changes nothing. */
const commandsThatChange = (argv: string[][]) =>
  argv.filter((a) => !(a[0] === 'cryptsetup' && a[1] === 'luksUUID'))

function init(workspace: string, timeoutMs = 30_000, signal?: AbortSignal) {
  return initCluster(
    // the releases after kubeadm are test/init/bring-up.test.ts's
    {
      workspace,
      conformance: false,
      mergeKubeconfig: false,
      timeout: { text: `${timeoutMs} ms`, ms: timeoutMs },
      skipHelm: true,
    },
    {
      progress: runStepsSilently,
      env: {},
      credentials: (_config, handshake) => createAttestedChannelCredentials(handshake),
      log: silentLogger,
      retryInitialDelayMs: 200,
      printLastResort: (kubeconfig) => process.stdout.write(kubeconfig),
      signal,
    },
  )
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  )

describe('init flow (swtpm, cryptsetup, aTLS, kubeadm contract fake)', function () {
  this.timeout(120_000)
  let node: LocalNode
  let running: RunningNode | undefined
  beforeEach(async () => {
    node = await startLocalNode()
    running = undefined
  })
  afterEach(async () => {
    await running?.daemon.stop(1_000)
    await node.stop()
  })

  it('initializes the node: PCR 15 carries the cluster ID, the disk key is replaced, kubeconfig and state are written', async () => {
    running = await startNode(node)
    await setClusterEndpoint(node.workspace, running.address)
    const result = await init(node.workspace)
    const ws = workspacePaths(node.workspace)

    const clusterId = Buffer.from(result.clusterID, 'hex')
    expect((await pcr15(node)).equals(clusterIdPcrValue(clusterId))).to.equal(true)
    const manual = createHash('sha256')
      .update(Buffer.concat([Buffer.alloc(32), createHash('sha256').update(clusterId).digest()]))
      .digest()
    expect((await pcr15(node)).equals(manual)).to.equal(true)

    const secret = parseMasterSecret(await readFile(ws.masterSecret, 'utf8'), ws.masterSecret)
    const disk = new CryptsetupDisk(node.disk.image, createRunner(), path.join(node.dir, 'scratch'))
    const diskKey = new ClusterKms(secret.key, secret.salt).diskKey(await disk.uuid())
    expect(await disk.opensWith(diskKey)).to.equal(true)
    expect(await disk.opensWith(node.disk.initialKey)).to.equal(false)

    const admin = parse(await readFile(ws.adminConf, 'utf8')) as {
      clusters: Array<{ cluster: { server: string } }>
    }
    expect(admin.clusters[0]?.cluster.server).to.equal('https://127.0.0.1:6443')
    expect((await stat(ws.adminConf)).mode & 0o777).to.equal(0o600)
    const state = parse(await readFile(ws.state, 'utf8')) as {
      clusterValues: { clusterID: string; measurementSalt: string }
    }
    expect(state.clusterValues.clusterID).to.equal(result.clusterID)
    expect(state.clusterValues.measurementSalt).to.match(/^[0-9a-f]{64}$/)

    const np = nodePaths(node.root)
    for (const file of [
      np.nodeStateFile,
      np.masterSecretFile,
      np.masterSaltFile,
      np.measurementSecretFile,
      np.measurementSaltFile,
      np.joinConfigFile,
      np.componentsFile,
    ])
      expect((await stat(file)).mode & 0o777, file).to.equal(0o600)
    expect(await readFile(np.masterSecretFile)).to.deep.equal(secret.key)
    // What the key and join services start from: the operator's measurements (PCR 15 enforced as
    // zero) and the components the node installed.
    const config = await loadConfig(ws.config)
    const joinConfig = parseJoinConfig(await readFile(np.joinConfigFile, 'utf8'))
    for (const [pcr, m] of Object.entries(config.attestation.qemuVTPM?.measurements ?? {}))
      expect(joinConfig.get(Number(pcr))?.expected.toString('hex'), `PCR ${pcr}`).to.equal(m.expected)
    expect(joinConfig.get(15)).to.deep.equal({ expected: Buffer.alloc(32), warnOnly: false })
    expect(await readComponentsFile(np.componentsFile)).to.deep.equal(config.kubernetesComponents)

    // Secrets never reach argv or the log.
    const initSecret = parse(await readFile(ws.state, 'utf8')).infrastructure.initSecret as string
    const secrets = [
      secret.key.toString('base64'),
      secret.key.toString('hex'),
      secret.key.toString('base64url'),
      diskKey.toString('hex'),
      diskKey.toString('base64'),
      initSecret,
    ]
    const argv = running.spyArgv.flat().join(' ')
    const log = (await running.logs.collect()).toString()
    for (const s of secrets) {
      expect(argv).not.to.include(s)
      expect(log).not.to.include(s)
    }
    expect(running.spyArgv.some((a) => a[1] === 'luksChangeKey')).to.equal(true)
    await running.daemon.done
    expect(running.daemon.outcome).to.equal('initialized')
  })

  it('refuses a wrong init secret and leaves the node unlocked', async () => {
    running = await startNode(node)
    await setClusterEndpoint(node.workspace, running.address)
    const ws = workspacePaths(node.workspace)
    await writeFile(
      ws.state,
      (await readFile(ws.state, 'utf8')).replace(/initSecret: \w+/, `initSecret: ${'ab'.repeat(32)}`),
    )
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    expect(String((err as Error).message)).to.include('invalid init secret')
    expect((err as CliError).hint)
      .to.include('the node was not changed')
      .and.include('init secret')
    expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
    expect(commandsThatChange(running.spyArgv)).to.deep.equal([])
    expect(await exists(ws.masterSecret)).to.equal(true)
    expect(await exists(ws.adminConf)).to.equal(false)
  })

  it('refuses to start on a node bootstrapped before (PCR 15 not zero)', async () => {
    await extendPcr(node.swtpm.open, 15, Buffer.alloc(32, 1))
    const started = startNode(node)
    await expect(started).to.be.rejectedWith(
      NodeBootstrappedError,
      /bootstrapped before \(PCR 15 is [0-9a-f]{64}/,
    )
  })

  it('refuses a node whose measurements do not match: the Init handler never runs, kubeadm never starts', async () => {
    running = await startNode(node)
    await setClusterEndpoint(node.workspace, running.address)
    const ws = workspacePaths(node.workspace)
    const config = await loadConfig(ws.config)
    const m = config.attestation.qemuVTPM?.measurements ?? {}
    m['4'] = { expected: 'ff'.repeat(32), warnOnly: false }
    await writeFile(ws.config, stringifyYaml(config))
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    expect((err as CliError).exitCode).to.equal(4)
    const said = chainMessage(err)
    expect(said, said).to.include('failed attestation; nothing was sent to it: attestation refused: ')
    expect(said)
      .to.include('index 4')
      .and.not.match(/UNAVAILABLE|No connection established|Last error/)
    expect((await running.logs.collect()).toString()).not.to.include('Init request received')
    expect(commandsThatChange(running.spyArgv)).to.deep.equal([])
    expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
  })

  it('kubeadm fails: init_failure, the node logs land in constellation-cluster.log, the master secret stays', async () => {
    running = await startNode(node, { KUBEADM_FAKE_FAIL: 'init' })
    await setClusterEndpoint(node.workspace, running.address)
    const ws = workspacePaths(node.workspace)
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CliError)
    expect((err as Error).message).to.match(
      /initializing the cluster failed on the node: running kubeadm init: \S+kubeadm init -v=5 .* exited with code 1/,
    )
    expect((err as CliError).hint)
      .to.include('cannot be initialized again')
      .and.include(ws.clusterLog)
    const clusterLog = await readFile(ws.clusterLog, 'utf8')
    expect(clusterLog).to.include('timed out waiting for the condition')
    expect(clusterLog).to.include('"msg":"Init failed"')
    expect(await exists(ws.masterSecret)).to.equal(true)
    expect(await exists(ws.adminConf)).to.equal(false)
    await running.daemon.done
    expect(running.daemon.outcome).to.equal('failed')
  })

  it('a file that appears at constellation-admin.conf while the node initializes: the kubeconfig goes to a fallback file, the state records the cluster ID', async () => {
    const hold = await node.holdKubeadm()
    running = await startNode(node)
    await setClusterEndpoint(node.workspace, running.address)
    const ws = workspacePaths(node.workspace)
    const initDone = init(node.workspace)
    await hold.reached()
    await symlink(path.join(node.dir, 'nowhere'), ws.adminConf)
    await hold.release()
    const result = await initDone
    expect(result.kubeconfig.startsWith(`${ws.adminConf}.`), result.kubeconfig).to.equal(true)
    expect((await stat(result.kubeconfig)).mode & 0o777).to.equal(0o600)
    expect(parse(await readFile(result.kubeconfig, 'utf8')).clusters).to.have.length(1)
    expect(result.warnings.join('\n'))
      .to.include(`${ws.adminConf} could not be written`)
      .and.include(result.kubeconfig)
    expect(await readlink(ws.adminConf)).to.equal(path.join(node.dir, 'nowhere'))
    const state = parse(await readFile(ws.state, 'utf8')) as { clusterValues: { clusterID: string } }
    expect(state.clusterValues.clusterID).to.equal(result.clusterID)
  })

  it('kubeadm fails with a symlink at constellation-cluster.log: the link target is not written, the hint says why', async () => {
    running = await startNode(node, { KUBEADM_FAKE_FAIL: 'init' })
    await setClusterEndpoint(node.workspace, running.address)
    const ws = workspacePaths(node.workspace)
    const victim = path.join(node.dir, 'victim')
    await writeFile(victim, 'mine\n')
    await symlink(victim, ws.clusterLog)
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect((err as Error).message).to.include('initializing the cluster failed on the node')
    expect((err as CliError).hint).to.include(
      `the node's logs were not saved: ${ws.clusterLog} is a symbolic link`,
    )
    expect(await readFile(victim, 'utf8')).to.equal('mine\n')
  })

  it('retries while the node refuses connections and initializes once it is up', async () => {
    const port = await freePort()
    await setClusterEndpoint(node.workspace, `127.0.0.1:${port}`)
    const initDone = init(node.workspace)
    await new Promise((r) => setTimeout(r, 1_000)) // a few refused attempts first
    running = await startNode(node, {}, {}, `127.0.0.1:${port}`)
    const result = await initDone
    expect(result.clusterID).to.match(/^[0-9a-f]{64}$/)
  })

  it("the caller's signal ends the wait for a node as the timeout would (mini up interrupted)", async () => {
    const port = await freePort()
    await setClusterEndpoint(node.workspace, `127.0.0.1:${port}`) // nothing listens: init keeps retrying
    const interrupt = new AbortController()
    // a timeout far beyond the test's: only the signal can end this init in time
    const initDone = init(node.workspace, 3_600_000, interrupt.signal).then(
      () => 'initialized',
      () => 'ended',
    )
    await new Promise((r) => setTimeout(r, 300))
    interrupt.abort('SIGINT')
    expect(await initDone).to.equal('ended')
  })

  it('two CLIs racing: one wins, the other is refused and changes nothing', async () => {
    running = await startNode(node)
    await setClusterEndpoint(node.workspace, running.address)
    const second = path.join(node.dir, 'ws2')
    await cp(node.workspace, second, { recursive: true })
    const results = await Promise.allSettled([init(node.workspace), init(second)])
    const won = results.filter((r) => r.status === 'fulfilled')
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    expect(won).to.have.length(1)
    expect(lost).to.have.length(1)
    // Which refusal depends on when the loser's handshake ran: before the winner took the node lock,
    // the node refuses the second Init; after it, PCR 15 carries the cluster ID and the loser's own
    // attestation check refuses the node, so nothing is sent. Either way the loser changed nothing.
    const loser = lost[0]?.reason as CliError
    if (loser.message.includes('failed attestation')) {
      expect(loser.exitCode).to.equal(4)
      expect(loser.message).to.match(
        /^the node at 127\.0\.0\.1:\d+ failed attestation; nothing was sent to it: .*untrusted measurement value [0-9a-f]{64} at index 15/s,
      )
    } else {
      expect(loser.message).to.include(
        'initializing the cluster failed on the node: node is already being activated',
      )
      expect(loser.hint).to.include('this request changed nothing on the node')
    }
  })

  it('an unreadable state disk fails Init before the lock: nothing changes, and Init works once the disk is there', async () => {
    const device = path.join(node.dir, 'not-yet.img')
    running = await startNode({
      ...node,
      nodeConfig: (listen) => {
        const config = node.nodeConfig(listen)
        return { ...config, stateDisk: { ...config.stateDisk, device } }
      },
    })
    await setClusterEndpoint(node.workspace, running.address)
    const ws = workspacePaths(node.workspace)
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect((err as Error).message).to.include(
      'initializing the cluster failed on the node: the state disk cannot be read; nothing was changed on the node',
    )
    expect((err as CliError).hint).to.include('this request changed nothing on the node')
    expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
    const log = await readFile(ws.clusterLog, 'utf8')
    expect(log).to.include('Cannot read the state disk').and.include(device)
    // the daemon still serves: put the disk in place and run init again
    await cp(node.disk.image, device)
    const result = await init(node.workspace)
    expect((await pcr15(node)).equals(clusterIdPcrValue(Buffer.from(result.clusterID, 'hex')))).to.equal(true)
    await running.daemon.done
    expect(running.daemon.outcome).to.equal('initialized')
  })

  it('a join that took the node lock first wins: Init gets FailedPrecondition and changes nothing', async () => {
    const joinClusterId = Buffer.alloc(32, 9)
    let release = () => {}
    const fakeJoinClient: JoinClient = {
      // the lock's flag is up until `release`, and only then the join's onLocked: the window in
      // which an Init can still reach the node (the real join calls onLocked right after its extend)
      start: async (lock, onLocked) => {
        await lock.tryLockOnce(joinClusterId)
        await new Promise<void>((r) => (release = r))
        onLocked()
      },
      stop: () => Promise.resolve(release()),
    }
    running = await startNode(node, {}, { joinClient: fakeJoinClient })
    await setClusterEndpoint(node.workspace, running.address)
    // The default config enforces PCR 15 = 0, so the CLI already refuses the node in the handshake.
    const refused = await init(node.workspace).catch((e: unknown) => e)
    expect((refused as CliError).exitCode).to.equal(4)
    // With PCR 15 only warned about, the request reaches the node, whose lock is taken.
    const ws = workspacePaths(node.workspace)
    const config = await loadConfig(ws.config)
    const m = config.attestation.qemuVTPM?.measurements ?? {}
    m['15'] = { expected: '00'.repeat(32), warnOnly: true }
    await writeFile(ws.config, stringifyYaml(config))
    await rm(ws.masterSecret)
    const err = await init(node.workspace).catch((e: unknown) => e)
    expect(String((err as Error).message)).to.include(
      'initializing the cluster failed on the node: node is already being activated',
    )
    expect((await pcr15(node)).equals(clusterIdPcrValue(joinClusterId))).to.equal(true)
    expect(commandsThatChange(running.spyArgv)).to.deep.equal([])
    const disk = new CryptsetupDisk(node.disk.image, createRunner(), path.join(node.dir, 'scratch'))
    expect(await disk.opensWith(node.disk.initialKey)).to.equal(true)
    release()
    await running.daemon.done
    expect(running.daemon.outcome).to.equal('joined')
  })
})
