/** A firmware-like boot for the event-log tests: what each PCR measured, as a real log records it. */
import { EVENT_TYPES as T } from '../../../src/lib/attestation/eventlog/describe.js'
import { imageLoadEvent, type BootMeasurement } from '../../../src/lib/attestation/eventlog/write.js'

const separator = (pcr: number): BootMeasurement => ({ pcr, type: T.EV_SEPARATOR, data: Buffer.alloc(4) })

/** UEFI_VARIABLE_DATA for a variable of the global-variable GUID. */
export function efiVariable(name: string, value: Buffer): Buffer {
  const head = Buffer.alloc(32)
  Buffer.from('61dfe48bca93d211aa0d00e098032b8c', 'hex').copy(head, 0)
  head.writeBigUInt64LE(BigInt(name.length), 16)
  head.writeBigUInt64LE(BigInt(value.length), 24)
  return Buffer.concat([head, Buffer.from(name, 'utf16le'), value])
}

export function taggedEvent(id: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32LE(id, 0)
  head.writeUInt32LE(data.length, 4)
  return Buffer.concat([head, data])
}

export const BOOT: BootMeasurement[] = [
  { pcr: 0, type: T.EV_S_CRTM_VERSION, data: Buffer.from('1.0\0', 'utf16le') },
  { pcr: 0, type: T.EV_EFI_PLATFORM_FIRMWARE_BLOB, data: Buffer.alloc(16, 1) },
  { pcr: 7, type: T.EV_EFI_VARIABLE_DRIVER_CONFIG, data: efiVariable('SecureBoot', Buffer.from([1])) },
  { pcr: 1, type: T.EV_EFI_VARIABLE_BOOT, data: efiVariable('BootOrder', Buffer.from([0, 0])) },
  ...[0, 1, 2, 3, 5, 6, 7].map(separator),
  { pcr: 4, type: T.EV_EFI_ACTION, data: Buffer.from('Calling EFI Application from Boot Option') },
  {
    pcr: 4,
    type: T.EV_EFI_BOOT_SERVICES_APPLICATION,
    data: imageLoadEvent(4096, Buffer.from('04040400', 'hex')),
  },
  {
    pcr: 4,
    type: T.EV_EFI_BOOT_SERVICES_APPLICATION,
    data: imageLoadEvent(8192, Buffer.from('7fff0400', 'hex')),
  },
  separator(4),
  { pcr: 8, type: T.EV_IPL, data: Buffer.from('kernel_cmdline: console=ttyS0\0') },
  { pcr: 9, type: T.EV_EVENT_TAG, data: taggedEvent(0x8f3b22ed, Buffer.from('initrd')) },
  { pcr: 9, type: T.EV_IPL, data: Buffer.from('/boot/vmlinuz\0') },
]
