/**
 * The machine boundary of `mini` (machines.ts): what differs between process nodes and VM nodes is
 * said there and nowhere else: where the SIMULATED API listens and what its certificate names, the
 * component paths the config hands the nodes, the PCRs it expects; and how a VM's boot is read
 * from its guest's systemd (`systemctl show`), and which `mini up` options a VM cluster refuses
 * before anything starts.
 */
import path from 'node:path'
import { miniUp, type MiniIo } from '../../src/lib/mini/cluster.js'
import { miniPaths } from '../../src/lib/mini/layout.js'
import { processMachines, vmMachines } from '../../src/lib/mini/machines.js'
import { miniNetwork } from '../../src/lib/mini/network.js'
import { parseUnitStates } from '../../src/lib/mini/vm-node.js'
import { CliError, exitCodeOf } from '../../src/lib/errors/index.js'
import { exists, type Runner } from '../../src/lib/system/index.js'
import { VM_FIRMWARE_PCRS } from '../../src/lib/vm/index.js'
import { imageFiles } from '../../src/lib/vm/image.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const refusing: Runner = { run: () => Promise.reject(new Error('no command may run here')) }
const network = miniNetwork({ mode: 'netns', id: 'abcdef', prefix: '10.9.8' }, refusing)
const paths = miniPaths('/w')
const cp0 = { name: 'control-plane-0', role: 'control-plane' as const, index: 0, address: '10.9.8.2' }
const cp1 = { ...cp0, name: 'control-plane-1', index: 1, address: '10.9.8.3' }
const hostFiles = {
  nodeBinary: '/usr/bin/node',
  kubeadmFake: '/p/kubeadm',
  kubeletUnit: '/p/kubelet.service',
}

const vm = vmMachines(
  {
    network,
    runner: refusing,
    image: imageFiles('/cache/0123456789abcdef'),
    env: {},
    clusterId: network.id,
    accel: 'tcg',
  },
  paths,
)

describe('mini: the machine boundary', () => {
  it('VMs: the API on the host, its certificate naming every control plane and the host', () => {
    expect(vm.api(cp0, [cp0, cp1])).to.deep.equal({
      execPrefix: [],
      host: '10.9.8.1',
      certHosts: ['10.9.8.2', '10.9.8.3', '10.9.8.1'],
    })
    // processes: in cp-0's namespace, at its address
    const proc = processMachines({ network } as never, paths, network.id)
    expect(proc.api(cp0, [cp0, cp1])).to.deep.equal({
      execPrefix: ['ip', 'netns', 'exec', 'cst-abcdef-0'],
      host: '10.9.8.2',
      certHosts: ['10.9.8.2'],
    })
    expect(proc.componentFiles(hostFiles)).to.equal(hostFiles)
  })

  it("VMs: the components at the image's paths, the firmware's PCRs expected, the console as log", async () => {
    expect(vm.componentFiles(hostFiles)).to.deep.equal({
      nodeBinary: '/usr/local/bin/node',
      kubeadmFake: '/usr/lib/constellation/simulator/kubeadm-fake/kubeadm',
      kubeletUnit: '/usr/lib/constellation/simulator/kubelet-unit/kubelet.service',
    })
    const pcrs = await vm.bootPcrs()
    expect([...pcrs.keys()]).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(pcrs.get(4)?.toString('hex')).to.equal(VM_FIRMWARE_PCRS.get(4))
    expect(vm.bootstrapLog(cp0)).to.equal(path.join(paths.node(cp0.name).dir, 'console.log'))
  })

  it("reads a VM's units from systemctl show, unit by unit", () => {
    const shown = 'ActiveState=active\nSubState=exited\n\nActiveState=activating\nSubState=start\n'
    expect(parseUnitStates(shown)).to.deep.equal([
      { ActiveState: 'active', SubState: 'exited' },
      { ActiveState: 'activating', SubState: 'start' },
    ])
  })

  /** mini up of a 1 + 1 VM cluster with `io` standing in for the world. */
  const vmUp = (workspace: string, io: MiniIo, over: object = {}) =>
    miniUp(
      {
        workspace,
        controlPlanes: 1,
        workers: 1,
        kubernetes: 'v1.31',
        mode: 'netns',
        attestation: 'qemu-vtpm',
        skipHelm: true,
        retain: false,
        timeoutMs: 1000,
        machines: 'vm',
        ...over,
      },
      io,
    )

  describe('mini up --machines vm refuses, before anything starts', () => {
    const io = {
      runner: refusing,
      preflight: () => Promise.reject(new Error('preflight must not run')),
      vmImage: () => Promise.reject(new Error('no image may be built')),
      progress: () => {},
    } as unknown as MiniIo
    const up = (workspace: string, over: object) => vmUp(workspace, io, over)

    it('a network without taps (loopback, not root)', async () => {
      const tmp = await makeTempDir()
      try {
        await expect(up(tmp.dir, { mode: 'loopback' })).to.be.rejectedWith(
          /--machines vm needs the bridged network/,
        )
      } finally {
        await tmp.cleanup()
      }
    })

    it('an attestation its nodes do not do', async () => {
      const tmp = await makeTempDir()
      try {
        await expect(up(tmp.dir, { attestation: 'tpm-ek' })).to.be.rejectedWith(
          /--machines vm attests with qemu-vtpm .* not tpm-ek/,
        )
      } finally {
        await tmp.cleanup()
      }
    })
  })

  /** mini up whose `io` aborts the run mid-step, as Ctrl-C does: the error it ends with, and whether a workspace was made. */
  async function interruptedUp(io: (stop: AbortController) => object, over: object = {}) {
    const tmp = await makeTempDir()
    try {
      const stop = new AbortController()
      const workspace = path.join(tmp.dir, 'ws')
      const err = await vmUp(
        workspace,
        { runner: refusing, progress: () => {}, ...io(stop) } as unknown as MiniIo,
        {
          signal: stop.signal,
          ...over,
        },
      ).catch((e: unknown) => e)
      return { err, madeWorkspace: await exists(workspace) }
    } finally {
      await tmp.cleanup()
    }
  }

  it('mini up --machines vm interrupted while the image builds: exit 130, the workspace untouched', async () => {
    const { err, madeWorkspace } = await interruptedUp((stop) => ({
      preflight: () => Promise.resolve(),
      // the build sees the signal it was handed, and ends as an aborted mmdebstrap does
      vmImage: (signal?: AbortSignal) => {
        expect(signal).to.equal(stop.signal)
        stop.abort('SIGINT')
        return Promise.reject(new Error('mmdebstrap was killed'))
      },
    }))
    expect(err).to.be.instanceOf(CliError)
    expect((err as CliError).message).to.equal(
      "mini up was interrupted (SIGINT) while it built the node image; nothing was changed (the build's files are removed)",
    )
    expect(exitCodeOf(err)).to.equal(130)
    expect(madeWorkspace, 'no workspace was made').to.equal(false)
  })

  it('mini up interrupted while it checks for helm: exit 130, named as the interrupt, not as helm failing', async () => {
    const { err, madeWorkspace } = await interruptedUp(
      (stop) => ({
        // the terminal's Ctrl-C reaches `helm version` too, which dies before it says anything
        preflight: () => {
          stop.abort('SIGINT')
          return Promise.reject(new Error('could not read the helm version: ""'))
        },
      }),
      { machines: 'process' },
    )
    expect((err as CliError).message).to.equal(
      'mini up was interrupted (SIGINT) while it checked for helm; nothing was changed',
    )
    expect(exitCodeOf(err)).to.equal(130)
    expect(madeWorkspace, 'no workspace was made').to.equal(false)
  })
})
