/**
 * A node VM's QEMU and swtpm command lines: what the guest sees depends on each (its disks by
 * serial, its TPM device, its console, the fw_cfg entries its setup unit reads), so they are pinned.
 */
import { expect } from '../support/chai.js'
import { GUEST_STATE_DISK, qemuArgs, swtpmArgs, vmMac, type VmSpec } from '../../src/lib/vm/qemu.js'

const spec: VmSpec = {
  name: 'worker-0',
  image: { kernel: '/c/vmlinuz', initrd: '/c/initrd.img' },
  rootOverlay: '/n/root.qcow2',
  stateDisk: '/n/state-disk.img',
  memoryMiB: 1024,
  cpus: 1,
  accel: 'tcg',
  sockets: { swtpmCtrl: '/n/swtpm-ctrl.sock', qmp: '/n/qmp.sock', guestAgent: '/n/qga.sock' },
  consoleLog: '/n/console.log',
  tap: 'cstabcdeft1',
  mac: '02:c6:ab:cd:ef:03',
  address: '10.1.2.3/24',
  nodeConfigFile: '/n/node-config.yaml',
}

/** The value after each occurrence of `flag`. */
const values = (args: string[], flag: string) => args.flatMap((a, i) => (a === flag ? [args[i + 1]] : []))

describe('vm: qemu and swtpm command lines', () => {
  it('boots the image kernel with the root disk found by UUID and the console on the serial port', () => {
    const args = qemuArgs(spec)
    expect(values(args, '-kernel')).to.deep.equal(['/c/vmlinuz'])
    expect(values(args, '-append')[0]).to.match(/^root=UUID=[0-9a-f-]{36} rw console=ttyS0 net\.ifnames=0/)
    // the pc machine's floppy controller, which has no drive, is never probed; nor KVM loaded
    expect(values(args, '-append')[0]).to.match(/ modprobe\.blacklist=floppy,kvm_amd,kvm_intel,kvm( |$)/)
    expect(values(args, '-accel')).to.deep.equal(['tcg'])
    expect(values(args, '-cpu')).to.deep.equal(['max'])
    expect(values(args, '-serial')).to.deep.equal(['chardev:console'])
    expect(values(args, '-chardev')).to.include('file,id=console,path=/n/console.log,append=on')
  })

  it('gives the state disk the serial the node config names, and the TPM through swtpm', () => {
    const args = qemuArgs(spec)
    expect(GUEST_STATE_DISK).to.equal('/dev/disk/by-id/virtio-state')
    expect(values(args, '-device')).to.include('virtio-blk-pci,drive=state,serial=state')
    expect(values(args, '-drive')).to.include('file=/n/state-disk.img,if=none,id=state,format=raw')
    expect(values(args, '-chardev')).to.include('socket,id=tpm,path=/n/swtpm-ctrl.sock')
    expect(values(args, '-device')).to.include('tpm-tis,tpmdev=tpm0')
  })

  it('passes name, address and node config as the fw_cfg entries vm-guest-setup reads', () => {
    expect(values(qemuArgs(spec), '-fw_cfg')).to.deep.equal([
      'name=opt/constellation/hostname,string=worker-0',
      'name=opt/constellation/address,string=10.1.2.3/24',
      'name=opt/constellation/node-config,file=/n/node-config.yaml',
    ])
  })

  it("shares the SIMULATED API's folder over 9p; its kubeconfig and a control plane's upstream by fw_cfg", () => {
    const simulator = { apiDir: '/w/api', adminKubeconfig: '/w/api-admin.conf' }
    const worker = qemuArgs({ ...spec, simulator })
    expect(values(worker, '-virtfs')).to.deep.equal([
      'local,path=/w/api,mount_tag=mini-api,security_model=none,id=mini-api',
    ])
    expect(values(worker, '-fw_cfg').slice(3)).to.deep.equal([
      'name=opt/constellation/api-admin-kubeconfig,file=/w/api-admin.conf',
    ])
    const controlPlane = qemuArgs({ ...spec, simulator: { ...simulator, upstream: '10.1.2.1:6443' } })
    expect(values(controlPlane, '-fw_cfg').slice(4)).to.deep.equal([
      'name=opt/constellation/api-upstream,string=10.1.2.1:6443',
    ])
    // without a simulator (a VM of its own): nothing shared
    expect(values(qemuArgs(spec), '-virtfs')).to.deep.equal([])
  })

  it('uses the host CPU only with KVM', () => {
    expect(values(qemuArgs({ ...spec, accel: 'kvm' }), '-cpu')).to.deep.equal(['host'])
  })

  it("runs swtpm for QEMU's emulator backend, ending with its machine", () => {
    expect(swtpmArgs({ stateDir: '/n/tpm', ctrlSocket: '/n/c.sock', log: '/n/swtpm.log' })).to.deep.equal([
      'socket',
      '--tpm2',
      '--tpmstate',
      'dir=/n/tpm',
      '--ctrl',
      'type=unixio,path=/n/c.sock',
      '--log',
      'file=/n/swtpm.log,level=1',
      '--terminate',
    ])
  })

  it('derives a locally administered MAC per node from the cluster id', () => {
    expect(vmMac('abcdef', 0)).to.equal('02:c6:ab:cd:ef:02')
    expect(vmMac('abcdef', 14)).to.equal('02:c6:ab:cd:ef:10')
  })
})
