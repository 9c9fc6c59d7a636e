/**
 * Names and short descriptions of event-log entries, so an operator can read what was measured.
 * Descriptions are best effort: event data is what the firmware claims, never parsed for trust.
 */
const EFI_BASE = 0x80000000

export const EVENT_TYPES = {
  EV_PREBOOT_CERT: 0x0,
  EV_POST_CODE: 0x1,
  EV_UNUSED: 0x2,
  EV_NO_ACTION: 0x3,
  EV_SEPARATOR: 0x4,
  EV_ACTION: 0x5,
  EV_EVENT_TAG: 0x6,
  EV_S_CRTM_CONTENTS: 0x7,
  EV_S_CRTM_VERSION: 0x8,
  EV_CPU_MICROCODE: 0x9,
  EV_PLATFORM_CONFIG_FLAGS: 0xa,
  EV_TABLE_OF_DEVICES: 0xb,
  EV_COMPACT_HASH: 0xc,
  EV_IPL: 0xd,
  EV_IPL_PARTITION_DATA: 0xe,
  EV_NONHOST_CODE: 0xf,
  EV_NONHOST_CONFIG: 0x10,
  EV_NONHOST_INFO: 0x11,
  EV_OMIT_BOOT_DEVICE_EVENTS: 0x12,
  EV_EFI_VARIABLE_DRIVER_CONFIG: EFI_BASE + 0x1,
  EV_EFI_VARIABLE_BOOT: EFI_BASE + 0x2,
  EV_EFI_BOOT_SERVICES_APPLICATION: EFI_BASE + 0x3,
  EV_EFI_BOOT_SERVICES_DRIVER: EFI_BASE + 0x4,
  EV_EFI_RUNTIME_SERVICES_DRIVER: EFI_BASE + 0x5,
  EV_EFI_GPT_EVENT: EFI_BASE + 0x6,
  EV_EFI_ACTION: EFI_BASE + 0x7,
  EV_EFI_PLATFORM_FIRMWARE_BLOB: EFI_BASE + 0x8,
  EV_EFI_HANDOFF_TABLES: EFI_BASE + 0x9,
  EV_EFI_PLATFORM_FIRMWARE_BLOB2: EFI_BASE + 0xa,
  EV_EFI_HANDOFF_TABLES2: EFI_BASE + 0xb,
  EV_EFI_VARIABLE_BOOT2: EFI_BASE + 0xc,
  EV_EFI_HCRTM_EVENT: EFI_BASE + 0x10,
  EV_EFI_VARIABLE_AUTHORITY: EFI_BASE + 0xe0,
  EV_EFI_SPDM_FIRMWARE_BLOB: EFI_BASE + 0xe1,
  EV_EFI_SPDM_FIRMWARE_CONFIG: EFI_BASE + 0xe2,
} as const

const NAMES = new Map<number, string>(Object.entries(EVENT_TYPES).map(([name, v]) => [v, name]))

export function eventTypeName(type: number): string {
  return NAMES.get(type) ?? `unknown (0x${type.toString(16).padStart(8, '0')})`
}

const MAX_SHOWN_BYTES = 64

/** Printable ASCII or `hex:…`, cut at MAX_SHOWN_BYTES so one event never floods the output. */
function text(data: Buffer): string {
  const trimmed = data.subarray(0, data.indexOf(0) === -1 ? data.length : data.indexOf(0))
  if (trimmed.length > 0 && /^[\x20-\x7e\t\r\n]*$/.test(trimmed.toString('latin1')))
    return trimmed.toString('latin1').slice(0, 256)
  return hex(data)
}

function hex(data: Buffer): string {
  const shown = data.subarray(0, MAX_SHOWN_BYTES).toString('hex')
  return `hex:${shown}${data.length > MAX_SHOWN_BYTES ? `… (${data.length} bytes)` : ''}`
}

/** GUID in its registry form (the first three fields little-endian). */
function guid(b: Buffer): string {
  const le = (s: number, n: number) =>
    Buffer.from(b.subarray(s, s + n))
      .reverse()
      .toString('hex')
  const be = (s: number, n: number) => b.subarray(s, s + n).toString('hex')
  return `${le(0, 4)}-${le(4, 2)}-${le(6, 2)}-${be(8, 2)}-${be(10, 6)}`
}

/** UEFI_VARIABLE_DATA: GUID, name length (chars), data length, UTF-16LE name, data. */
function efiVariable(data: Buffer): string | undefined {
  if (data.length < 32) return undefined
  const nameChars = data.readBigUInt64LE(16)
  const dataLen = data.readBigUInt64LE(24)
  if (nameChars * 2n + dataLen + 32n !== BigInt(data.length)) return undefined
  const name = data.subarray(32, 32 + Number(nameChars) * 2).toString('utf16le')
  return `${name} (${guid(data)}), ${dataLen} bytes of data`
}

/** UEFI_IMAGE_LOAD_EVENT: where the image was, then its device path (shown as hex). */
function efiImage(data: Buffer): string | undefined {
  if (data.length < 32) return undefined
  const pathLen = data.readBigUInt64LE(24)
  if (pathLen + 32n !== BigInt(data.length)) return undefined
  return `image of ${data.readBigUInt64LE(8)} bytes, device path ${hex(data.subarray(32))}`
}

function noAction(data: Buffer): string {
  if (data.length === 17 && data.subarray(0, 16).toString('latin1') === 'StartupLocality\0')
    return `StartupLocality ${data[16]}`
  return text(data.subarray(0, 16))
}

function eventTag(data: Buffer): string | undefined {
  if (data.length < 8) return undefined
  const size = data.readUInt32LE(4)
  if (size + 8 !== data.length) return undefined
  return `tag 0x${data.readUInt32LE(0).toString(16)}: ${text(data.subarray(8))}`
}

function separator(data: Buffer): string {
  if (data.length === 4 && data.readUInt32LE(0) === 0) return 'separator'
  if (data.length === 4 && data.readUInt32LE(0) === 0xffffffff) return 'error separator'
  return hex(data)
}

const T = EVENT_TYPES
const DESCRIBERS = new Map<number, (d: Buffer) => string | undefined>([
  [T.EV_SEPARATOR, separator],
  [T.EV_NO_ACTION, noAction],
  [T.EV_EVENT_TAG, eventTag],
  [T.EV_IPL, text],
  [T.EV_ACTION, text],
  [T.EV_EFI_ACTION, text],
  [T.EV_S_CRTM_VERSION, (d) => (d.length % 2 === 0 ? d.toString('utf16le').replace(/\0+$/, '') : text(d))],
  [T.EV_EFI_VARIABLE_DRIVER_CONFIG, efiVariable],
  [T.EV_EFI_VARIABLE_BOOT, efiVariable],
  [T.EV_EFI_VARIABLE_BOOT2, efiVariable],
  [T.EV_EFI_VARIABLE_AUTHORITY, efiVariable],
  [T.EV_EFI_BOOT_SERVICES_APPLICATION, efiImage],
  [T.EV_EFI_BOOT_SERVICES_DRIVER, efiImage],
  [T.EV_EFI_RUNTIME_SERVICES_DRIVER, efiImage],
])

/** A one-line description of the event data; hex when the type is unknown or the data malformed. */
export function describeEvent(type: number, data: Buffer): string {
  return DESCRIBERS.get(type)?.(data) ?? hex(data)
}
