/**
 * Writes a crypto-agile event log as firmware and a boot loader do: the Spec ID header, then one
 * TCG_PCR_EVENT2 per measurement with its SHA-256 digest (the one bank it announces). For mini.
 */
import { createHash } from 'node:crypto'
import { extendPcr, TPM_ALG, type OpenTpm } from '../../tpm/index.js'
import { EV_NO_ACTION } from './parse.js'

export interface BootMeasurement {
  pcr: number
  type: number
  /** What was measured (hashed into the digest) unless `digest` is given. */
  data: Buffer
  /** The SHA-256 digest extended; SHA-256(data) by default. */
  digest?: Buffer
}

const SPEC_ID_HEADER = (() => {
  const h = Buffer.alloc(16 + 4 + 4 + 4 + 4 + 1)
  h.write('Spec ID Event03\0', 0, 'latin1')
  let o = 16
  o = h.writeUInt32LE(0, o) // platform class: client
  o = h.writeUInt8(0, o) // spec version minor
  o = h.writeUInt8(2, o) // major
  o = h.writeUInt8(0, o) // errata
  o = h.writeUInt8(2, o) // uintn size: 64-bit
  o = h.writeUInt32LE(1, o) // one algorithm: SHA-256, the bank mini's nodes quote
  o = h.writeUInt16LE(TPM_ALG.SHA256, o)
  o = h.writeUInt16LE(32, o)
  h.writeUInt8(0, o) // no vendor info
  return h
})()

export const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest()

/** The SHA-256 digest each measurement extends its PCR with. */
export const digestOf = (m: BootMeasurement): Buffer => m.digest ?? sha256(m.data)

/** A SHA-256-only crypto-agile log of these measurements, in order. */
export function encodeEventLog(measurements: readonly BootMeasurement[]): Buffer {
  const header = Buffer.alloc(4 + 4 + 20 + 4)
  header.writeUInt32LE(0, 0)
  header.writeUInt32LE(EV_NO_ACTION, 4)
  header.writeUInt32LE(SPEC_ID_HEADER.length, 28)
  const parts: Buffer[] = [header, SPEC_ID_HEADER]
  for (const m of measurements) {
    const head = Buffer.alloc(4 + 4 + 4 + 2)
    head.writeUInt32LE(m.pcr, 0)
    head.writeUInt32LE(m.type, 4)
    head.writeUInt32LE(1, 8)
    head.writeUInt16LE(TPM_ALG.SHA256, 12)
    const size = Buffer.alloc(4)
    size.writeUInt32LE(m.data.length)
    parts.push(head, digestOf(m), size, m.data)
  }
  return Buffer.concat(parts)
}

/**
 * Measures as firmware does: extends each PCR through the TPM, in order, and returns the log that
 * records it. The caller writes the log where the issuer reads it (securityfs' path under a root).
 */
export async function measureBoot(open: OpenTpm, measurements: readonly BootMeasurement[]): Promise<Buffer> {
  for (const m of measurements) if (m.type !== EV_NO_ACTION) await extendPcr(open, m.pcr, digestOf(m))
  return encodeEventLog(measurements)
}

/** The SHA-256 PCR values these measurements leave, from reset: what a verifier should expect. */
export function pcrsAfter(measurements: readonly BootMeasurement[]): Map<number, Buffer> {
  const pcrs = new Map<number, Buffer>()
  for (const m of measurements) {
    if (m.type === EV_NO_ACTION) continue
    const before = pcrs.get(m.pcr) ?? Buffer.alloc(32)
    pcrs.set(m.pcr, sha256(Buffer.concat([before, digestOf(m)])))
  }
  return pcrs
}

/** The fixed part of UEFI_IMAGE_LOAD_EVENT, before the device path. */
export const EV_EFI_IMAGE_LOAD_EVENT_BYTES = 32

/** UEFI_IMAGE_LOAD_EVENT: where the image was loaded, its length, and its device path. */
export function imageLoadEvent(imageLength: number, devicePath: Buffer): Buffer {
  const head = Buffer.alloc(EV_EFI_IMAGE_LOAD_EVENT_BYTES)
  head.writeBigUInt64LE(BigInt(imageLength), 8)
  head.writeBigUInt64LE(BigInt(devicePath.length), 24)
  return Buffer.concat([head, devicePath])
}
