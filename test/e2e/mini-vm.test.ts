/**
 * A mini node as a QEMU virtual machine (`--machines vm`), booted from the cached node image under
 * TCG with one vCPU: the image's real systemd runs the project's units unchanged, `state-disk
 * setup` maps the state disk with dm-crypt and dm-integrity (production's format: HMAC-SHA256 tags,
 * 4096-byte sectors, every sector written once at format so that none fails its check), its bind
 * mounts are in place, the bootstrapper serves Init on the VM's address (reached from the host over
 * the cluster's bridge), and the TPM it uses is swtpm behind the guest's /dev/tpmrm0. A reset
 * (QEMU system_reset) resets the PCRs and keeps the disk; a power cut (QEMU and swtpm SIGKILLed)
 * leaves a machine that boots again.
 *
 * `mini exec` runs commands in the guest through QEMU's guest agent, and `mini logs` shows its serial
 * console. Kubernetes is not involved (no init here): the node waits for init or a join as a new
 * node does.
 *
 * Slow: the image's first build takes minutes (then it is cached under .cache/vm-images), and each
 * boot about a minute on one emulated vCPU, three boots in all. Needs root (tap devices, the
 * bridge, mmdebstrap), qemu-system-x86_64 and mmdebstrap; skipped without them.
 */
import { execFileSync } from 'node:child_process'
import { rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { connect } from 'node:net'
import { chooseNetwork, miniNetwork, removeNetwork, type MiniNetwork } from '../../src/lib/mini/network.js'
import { MetadataServer } from '../../src/lib/mini/metadata-server.js'
import { METADATA_PORT, miniPaths, writeMiniRecord, type MiniNodeRecord } from '../../src/lib/mini/layout.js'
import { showNodeLogs } from '../../src/lib/mini/logs.js'
import { runMiniExec } from '../../src/wiring/mini-exec.js'
import {
  powerCutVmNode,
  powerOnVmNode,
  provisionVmNode,
  resetVmNode,
  vmNodeFiles,
  type VmBootContext,
} from '../../src/lib/mini/vm-node.js'
import { createRunner } from '../../src/lib/system/index.js'
import { generateWorkspace, initSecretHashFor, loadConfig } from '../../src/lib/config/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { simulatedComponents, simulatorPaths } from '../../src/lib/simulator/index.js'
import { DEFAULT_KUBERNETES_MINOR } from '../../src/lib/versions/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { GUEST_NODE, GUEST_PROJECT_DIR } from '../../src/lib/vm/image.js'
import { runCli } from '../support/cli.js'
import type { ImageResult } from '../../src/lib/vm/index.js'
import { guestExec, waitForGuestAgent } from '../../src/lib/vm/guest-agent.js'
import { ensureNodeImage } from '../../src/wiring/vm.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const has = (program: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const runnable = process.getuid?.() === 0 && has('qemu-system-x86_64') && has('mmdebstrap')

/** Boot to the bootstrapper on one emulated vCPU, with a fresh disk's format: about 1.5 min here. */
const BOOT_MS = 6 * 60_000

describe('mini --machines vm: a node as a QEMU VM', function () {
  this.timeout(30 * 60_000)
  let tmp: TempDir
  let image: ImageResult
  let network: MiniNetwork
  let metadata: MetadataServer | undefined
  const runner = createRunner()
  const node: MiniNodeRecord = { name: 'control-plane-0', role: 'control-plane', index: 0, address: '' }
  let ctx: VmBootContext
  /** The operator's workspace (config generate), whose init secret's hash the metadata serves. */
  const ws = () => path.join(tmp.dir, 'ws')
  let initSecretHash: string

  before(async function () {
    if (!runnable) this.skip()
    image = await ensureNodeImage((line) => process.stderr.write(`  image: ${line}\n`))
    tmp = await makeTempDir('constell-vm-')
    network = miniNetwork(await chooseNetwork('netns', runner), runner)
    node.address = network.nodeAddress(0)
    await generateWorkspace({
      workspace: ws(),
      provider: 'qemu',
      kubernetes: DEFAULT_KUBERNETES_MINOR,
      variant: 'qemu-vtpm',
      name: 'vm',
      endpoint: node.address,
    })
    // a node reads it at boot, as from its cloud's metadata
    initSecretHash = (await initSecretHashFor(ws())).initSecretHash
    ctx = { network, runner, image: image.files, env: process.env, clusterId: network.id, accel: 'tcg' }
    // the record `mini exec` and `mini logs` read: the node's files where a cluster keeps them
    await writeMiniRecord(tmp.dir, {
      version: 1,
      startedAt: new Date().toISOString(),
      network: { mode: network.mode, id: network.id, prefix: network.prefix },
      createdFiles: [],
      createdWorkspace: false,
      nodes: [node],
      machines: 'vm',
    })
  })

  after(async () => {
    if (!runnable) return
    await powerCutVmNode(network.id, node.name).catch(() => {})
    await metadata?.stop()
    await removeNetwork(network, runner)
    await tmp?.cleanup()
  })

  const files = () => vmNodeFiles(miniPaths(tmp.dir).node(node.name).dir)
  const exec = async (script: string) => {
    const r = await guestExec(files().sockets.guestAgent, ['/bin/sh', '-c', script])
    if (r.exitCode !== 0) throw new Error(`guest: ${script}: exit ${r.exitCode}\n${r.stdout}${r.stderr}`)
    return r.stdout
  }
  const hostConnects = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = connect({ host: node.address, port, timeout: 2_000 })
      s.once('connect', () => (s.destroy(), resolve(true)))
      s.once('error', () => resolve(false))
      s.once('timeout', () => (s.destroy(), resolve(false)))
    })
  /** Until the bootstrapper serves Init on the VM's address; returns the guest's boot id. */
  async function bootedToInit(): Promise<string> {
    await waitForGuestAgent(files().sockets.guestAgent, BOOT_MS)
    // joins the boot's start job and waits for it: 0 once the oneshot unit is active
    const started = await guestExec(
      files().sockets.guestAgent,
      ['systemctl', 'start', 'constellation-state-disk.service'],
      { timeoutMs: BOOT_MS },
    )
    if (started.exitCode !== 0)
      throw new Error(
        `state-disk setup failed:\n${await exec('journalctl -b -u constellation-state-disk -o cat --no-pager | tail -30')}`,
      )
    await eventually(
      'Init (port 9000) on the VM, from the host',
      async () => ((await hostConnects(9000)) ? true : undefined),
      BOOT_MS,
    )
    return (await exec('cat /proc/sys/kernel/random/boot_id')).trim()
  }

  async function expectMappedStateDisk() {
    const status = await exec('cryptsetup status state')
    expect(status).to.match(/type:\s+LUKS2/)
    expect(status).to.match(/integrity:\s+hmac\(sha256\)/)
    expect(status).to.match(/sector size:\s+4096/)
    expect(await exec('findmnt -n -o SOURCE /run/state')).to.equal('/dev/mapper/state\n')
    // the disk's persistent folders are bound from it
    expect(await exec('findmnt -n -o SOURCE /var/config')).to.match(
      /^\/dev\/mapper\/state\[\/persistent\/var\/config\]/,
    )
    // formatted as production does (wiped): every sector reads back, none fails its integrity check
    await exec('dd if=/dev/mapper/state of=/dev/null bs=1M status=none')
  }

  it('boots under systemd and maps its state disk with dm-crypt + dm-integrity', async () => {
    await provisionVmNode(ctx, node, files())
    metadata = new MetadataServer(() => ({
      members: [{ name: node.name, role: node.role, vpcIP: node.address }],
      endpointHost: node.address,
      initSecretHash,
    }))
    await metadata.start(`${network.hostAddress}:${METADATA_PORT}`)
    const started = Date.now()
    await powerOnVmNode(ctx, node, files())
    await bootedToInit()
    process.stderr.write(`  power on to Init: ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
    await expectMappedStateDisk()
    const units = await exec(
      'systemctl show -p ActiveState --value constellation-vm-guest constellation-state-disk constellation-bootstrapper',
    )
    expect(units.split('\n').filter(Boolean)).to.deep.equal(['active', 'active', 'active'])
    // the node software talks to the kernel's TPM resource manager, which swtpm backs
    expect(await exec('grep -A1 "^tpm:" /etc/constellation/node-config.yaml')).to.include('/dev/tpmrm0')
    expect(await exec('cat /sys/class/tpm/tpm0/tpm_version_major')).to.equal('2\n')
    expect(await exec('readlink -f /usr/bin/constellation && node --version')).to.match(/run\.js\nv2\d\./)
    // mini exec: the guest's exit code and output, as they are
    expect(await runMiniExec(tmp.dir, node.name, ['sh', '-c', 'hostname; exit 7'])).to.deep.equal({
      exitCode: 7,
      stdout: `${node.name}\n`,
      stderr: '',
    })
    // mini logs: the serial console (kernel, systemd, the units' JSON lines by journald) is the node's log
    let logs = ''
    await showNodeLogs(
      { workspace: tmp.dir, node: node.name, service: 'console', follow: false },
      (t) => (logs += t),
    )
    expect(logs).to.match(/Started constellation-bootstrapper\.service/)
    expect(logs).to.match(/"msg":"Init server listening"/)
  })

  it('a reset (QEMU system_reset) resets the PCRs, keeps the disk and boots to Init again', async () => {
    const before = (await exec('cat /proc/sys/kernel/random/boot_id')).trim()
    const luksUuid = (await exec('cryptsetup luksUUID /dev/disk/by-id/virtio-state')).trim()
    await resetVmNode(files())
    const after = await bootedToInit()
    expect(after).to.not.equal(before)
    // not initialized: the node's disk was never re-keyed, so the new boot formats it afresh
    expect((await exec('cryptsetup luksUUID /dev/disk/by-id/virtio-state')).trim())
      .to.be.a('string')
      .and.not.equal('')
    expect(luksUuid).to.match(/^[0-9a-f-]{36}$/)
    // PCR 15 (the node lock) is zero after the reset: no init or join has taken this boot
    expect(await exec('tpm2_pcrread sha256:15')).to.match(/15\s*:\s*0x0{64}/i)
    await expectMappedStateDisk()
  })

  it('a power cut (QEMU and swtpm killed) leaves a machine that boots again', async () => {
    await powerCutVmNode(network.id, node.name)
    await rm(files().sockets.qmp, { force: true })
    await powerOnVmNode(ctx, node, files())
    await bootedToInit()
    await expectMappedStateDisk()
  })

  it('constellation init from the host: attested over aTLS, the node locks, re-keys its disk and runs kubeadm', async () => {
    const file = workspacePaths(ws()).config
    const config = await loadConfig(file)
    // Kubernetes SIMULATED: the simulator's kubeadm and kubelet stand-ins, at the image's paths
    config.kubernetesComponents = simulatedComponents(config.kubernetesVersion, {
      ...simulatorPaths(GUEST_PROJECT_DIR),
      nodeBinary: GUEST_NODE,
    })
    // The firmware's PCR 4 (SeaBIOS measures its boot path there), read from this node: the test is
    // about the attested channel, not about where reference values come from (the image's job, later)
    const pcr4 = /4\s*:\s*0x([0-9A-F]{64})/i.exec(await exec('tpm2_pcrread sha256:4'))?.[1]
    const section = config.attestation as unknown as Record<string, { measurements: Record<string, unknown> }>
    section.qemuVTPM!.measurements['4'] = { expected: pcr4!.toLowerCase(), warnOnly: false }
    await writeFile(file, stringifyYaml(config))

    const res = await runCli(['init', '-C', ws(), '--skip-helm', '--timeout', '8m'], {
      timeoutMs: 10 * 60_000,
    })
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.include('successfully initialized')
    expect(res.stdout + res.stderr).to.include('Verifying the attestation of the node')
    // the node lock: PCR 15 holds the cluster ID now
    expect(await exec('tpm2_pcrread sha256:15')).to.not.match(/15\s*:\s*0x0{64}/i)
    expect(await exec('journalctl -b -u constellation-bootstrapper -o cat --no-pager')).to.include(
      '"msg":"State disk key set"',
    )
    await expectMappedStateDisk()
  })
})
