/**
 * One node as a QEMU virtual machine: its argv (pure, tested on its own), and its life: swtpm as
 * its TPM (QEMU's `-tpmdev emulator`, so the guest has /dev/tpm0 and /dev/tpmrm0), power on, a
 * reset (mini restarts QEMU: the TPM is re-initialised so its PCRs reset, the disks stay), an
 * orderly power off (ACPI, then quit) and a power cut (QEMU and swtpm SIGKILLed: no TPM2_Shutdown,
 * whatever the guest had not written is lost).
 */
import { connect } from 'node:net'
import type { ImageFiles } from './image.js'

/** Kernel modules a node never loads (see the kernel command line below). */
const UNUSED_MODULES = ['floppy', 'kvm_amd', 'kvm_intel', 'kvm'] as const

/**
 * Every VM boots the image's kernel directly, with the root file system found by its UUID, which
 * the image build fixes (the same tree gives the same file system).
 */
export const ROOT_UUID = 'c0a5fe11-0000-4000-8000-000000000001'
/** The state disk's serial: the guest sees it as /dev/disk/by-id/virtio-<serial>. */
export const STATE_DISK_SERIAL = 'state'
export const GUEST_STATE_DISK = `/dev/disk/by-id/virtio-${STATE_DISK_SERIAL}`
/** fw_cfg entries the guest's vm-guest-setup reads (templates/vm). */
export const FW_CFG_PREFIX = 'opt/constellation'

export interface VmSpec {
  name: string
  image: Pick<ImageFiles, 'kernel' | 'initrd'>
  /** The node's copy-on-write overlay over the image's root disk (qcow2). */
  rootOverlay: string
  /** A raw disk image: the node's state disk. */
  stateDisk: string
  memoryMiB: number
  cpus: number
  /** tcg everywhere; kvm where the host offers real KVM (not this PVM host: a stock kernel hangs). */
  accel: 'tcg' | 'kvm'
  sockets: { swtpmCtrl: string; qmp: string; guestAgent: string }
  /** The serial console: kernel, systemd and the journal (journald forwards it there). */
  consoleLog: string
  /** A tap device on the cluster's bridge, and the guest's MAC on it. */
  tap: string
  mac: string
  /** `<address>/<prefix length>` for eth0 */
  address: string
  nodeConfigFile: string
  /** Kubernetes SIMULATED: how the guest reaches the cluster's API simulator on the host. */
  simulator?: VmSimulatorSpec
}

/**
 * The API simulator's folder (shared over 9p, tag mini-api: the kubeadm stand-in in the guest reads
 * and writes it as kubeadm the API), its admin kubeconfig (by fw_cfg), and on control planes the
 * host's address and port the guest's API port forwards to.
 */
export interface VmSimulatorSpec {
  apiDir: string
  adminKubeconfig: string
  upstream?: string
}

/** qemu-system-x86_64's argv for a node (without the program). */
export function qemuArgs(spec: VmSpec): string[] {
  const fw = (name: string, value: string) => ['-fw_cfg', `name=${FW_CFG_PREFIX}/${name},${value}`]
  return [
    ['-name', spec.name],
    ['-machine', 'pc', '-accel', spec.accel, '-cpu', spec.accel === 'kvm' ? 'host' : 'max'],
    ['-smp', String(spec.cpus), '-m', String(spec.memoryMiB)],
    ['-nodefaults', '-no-user-config', '-display', 'none'],
    ['-kernel', spec.image.kernel, '-initrd', spec.image.initrd],
    [
      '-append',
      // panic=-1: a kernel panic resets the machine, as a node's watchdog would. Modules a node has
      // no use for, each loaded by udev at every boot on the one emulated vCPU: the floppy driver
      // (the pc machine's controller has no drive; probing it costs about a second) and KVM (TCG's
      // `max` CPU shows SVM/VMX; nodes run no VMs of their own)
      `root=UUID=${ROOT_UUID} rw console=ttyS0 net.ifnames=0 panic=-1 systemd.show_status=false modprobe.blacklist=${UNUSED_MODULES.join(',')}`,
    ],
    ['-drive', `file=${spec.rootOverlay},if=none,id=root,format=qcow2`],
    ['-device', 'virtio-blk-pci,drive=root,serial=root'],
    ['-drive', `file=${spec.stateDisk},if=none,id=state,format=raw`],
    ['-device', `virtio-blk-pci,drive=state,serial=${STATE_DISK_SERIAL}`],
    ['-chardev', `socket,id=tpm,path=${spec.sockets.swtpmCtrl}`],
    ['-tpmdev', 'emulator,id=tpm0,chardev=tpm', '-device', 'tpm-tis,tpmdev=tpm0'],
    ['-netdev', `tap,id=net0,ifname=${spec.tap},script=no,downscript=no`],
    ['-device', `virtio-net-pci,netdev=net0,mac=${spec.mac}`],
    ['-chardev', `file,id=console,path=${spec.consoleLog},append=on`, '-serial', 'chardev:console'],
    ['-chardev', `socket,id=qga,path=${spec.sockets.guestAgent},server=on,wait=off`],
    ['-device', 'virtio-serial', '-device', 'virtserialport,chardev=qga,name=org.qemu.guest_agent.0'],
    ['-qmp', `unix:${spec.sockets.qmp},server=on,wait=off`],
    fw('hostname', `string=${spec.name}`),
    fw('address', `string=${spec.address}`),
    fw('node-config', `file=${spec.nodeConfigFile}`),
    spec.simulator
      ? [
          [
            '-virtfs',
            `local,path=${spec.simulator.apiDir},mount_tag=mini-api,security_model=none,id=mini-api`,
          ],
          fw('api-admin-kubeconfig', `file=${spec.simulator.adminKubeconfig}`),
          spec.simulator.upstream ? fw('api-upstream', `string=${spec.simulator.upstream}`) : [],
        ].flat()
      : [],
  ].flat()
}

/** swtpm's argv (without the program) for QEMU's emulator backend: QEMU drives it over `ctrl`. */
export function swtpmArgs(spec: { stateDir: string; ctrlSocket: string; log: string }): string[] {
  return [
    'socket',
    '--tpm2',
    '--tpmstate',
    `dir=${spec.stateDir}`,
    '--ctrl',
    `type=unixio,path=${spec.ctrlSocket}`,
    '--log',
    `file=${spec.log},level=1`,
    // ends when QEMU closes the control channel: a powered-off machine has no TPM running
    '--terminate',
  ]
}

/** A guest MAC from the node's index on the cluster's bridge (locally administered). */
export const vmMac = (clusterId: string, index: number) =>
  `02:c6:${(clusterId.padStart(6, '0').slice(-6).match(/../g) ?? []).join(':')}:${(index + 2).toString(16).padStart(2, '0')}`

/** One QMP command on the machine's monitor socket (capabilities negotiated first). */
export async function qmpCommand(socketPath: string, command: string, timeoutMs = 10_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath)
    let buffer = ''
    let stage: 'greeting' | 'capabilities' | 'command' = 'greeting'
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`QMP ${command} on ${socketPath}: no answer in ${timeoutMs} ms`))
    }, timeoutMs)
    const done = (err?: Error, value?: unknown) => {
      clearTimeout(timer)
      socket.destroy()
      if (err) reject(err)
      else resolve(value)
    }
    socket.on('error', (err) => done(new Error(`QMP ${command} on ${socketPath}`, { cause: err })))
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      buffer += chunk
      let nl: number
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).trim()
        buffer = buffer.slice(nl + 1)
        if (!line) continue
        const msg = JSON.parse(line) as {
          QMP?: unknown
          return?: unknown
          error?: { desc?: string }
          event?: string
        }
        if (msg.event) continue
        if (msg.error) return done(new Error(`QMP ${command}: ${msg.error.desc ?? 'error'}`))
        if (stage === 'greeting' && msg.QMP) {
          stage = 'capabilities'
          socket.write(JSON.stringify({ execute: 'qmp_capabilities' }) + '\n')
        } else if (stage === 'capabilities' && 'return' in msg) {
          stage = 'command'
          socket.write(JSON.stringify({ execute: command }) + '\n')
        } else if (stage === 'command' && 'return' in msg) return done(undefined, msg.return)
      }
    })
  })
}
