/**
 * Node virtual machines for `mini --machines vm`: the image (Debian packages plus this project,
 * built once per version into a cache), QEMU machines with swtpm as their TPM, and QEMU's guest
 * agent to run commands on them.
 */
export { ensureImage, pruneImages, staleImages } from './image.js'
export type { ImageFiles, ImageResult } from './image.js'
export { GUEST_STATE_DISK, qemuArgs, qmpCommand, swtpmArgs, vmMac } from './qemu.js'
export type { VmSimulatorSpec } from './qemu.js'
export { imageFiles, GUEST_NODE, GUEST_PROJECT_DIR } from './image.js'
export { guestExec } from './guest-agent.js'
export { VM_FIRMWARE_PCRS } from './firmware.js'
