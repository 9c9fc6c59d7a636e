/**
 * AMD's extensions on a VCEK or VLEK certificate (AMD "Versioned Chip Endorsement Key (VCEK)
 * Certificate and KDS Interface Specification", pub. 57230): the TCB the key was derived for, the
 * chip's hardware ID, the product name and, on a VLEK, the cloud provider it was issued to.
 */
import {
  certificateExtensions,
  decodeDerIa5String,
  decodeDerInteger,
  encodeDerIa5String,
  encodeDerInteger,
  type CertificateExtension,
} from '../../x509/index.js'
import { AttestationError } from '../errors.js'

export const AMD_OID = {
  structVersion: '1.3.6.1.4.1.3704.1.1',
  productName: '1.3.6.1.4.1.3704.1.2',
  blSpl: '1.3.6.1.4.1.3704.1.3.1',
  teeSpl: '1.3.6.1.4.1.3704.1.3.2',
  snpSpl: '1.3.6.1.4.1.3704.1.3.3',
  ucodeSpl: '1.3.6.1.4.1.3704.1.3.8',
  hwId: '1.3.6.1.4.1.3704.1.4',
  cspId: '1.3.6.1.4.1.3704.1.5',
} as const

export interface TcbLevels {
  bootloader: number
  tee: number
  snp: number
  microcode: number
}

export interface AmdKeyExtensions {
  tcb: TcbLevels
  /** 64 bytes; VCEKs only. */
  hwId?: Buffer
  /** "Milan-B0", "Genoa", …: the product, then the stepping where the KDS names one. */
  productName?: string
  /** VLEKs only: the cloud service provider the key was issued to. */
  cspId?: string
}

const TCB_OIDS: Readonly<Record<keyof TcbLevels, string>> = {
  bootloader: AMD_OID.blSpl,
  tee: AMD_OID.teeSpl,
  snp: AMD_OID.snpSpl,
  microcode: AMD_OID.ucodeSpl,
}
const HWID_BYTES = 64

/** Reads the extensions; a missing TCB level or an unreadable value is refused, naming the OID. */
export function readAmdExtensions(cert: Buffer, role: string): AmdKeyExtensions {
  let exts: Map<string, Buffer>
  try {
    exts = certificateExtensions(cert)
  } catch (cause) {
    throw new AttestationError(`${role} certificate: extensions cannot be read: ${messageOf(cause)}`, {
      cause,
    })
  }
  const read = <T>(oid: string, name: string, decode: (v: Buffer) => T): T | undefined => {
    const value = exts.get(oid)
    if (value === undefined) return undefined
    try {
      return decode(value)
    } catch (cause) {
      throw new AttestationError(`${role} certificate: extension ${name} (${oid}) ${messageOf(cause)}`, {
        cause,
      })
    }
  }
  const level = (name: keyof TcbLevels): number => {
    const value = read(TCB_OIDS[name], `${name} SPL`, decodeDerInteger)
    if (value === undefined)
      throw new AttestationError(`${role} certificate: extension ${name} SPL (${TCB_OIDS[name]}) is missing`)
    if (value < 0 || value > 255)
      throw new AttestationError(
        `${role} certificate: extension ${name} SPL (${TCB_OIDS[name]}) is ${value}, not a byte`,
      )
    return value
  }
  return {
    tcb: {
      bootloader: level('bootloader'),
      tee: level('tee'),
      snp: level('snp'),
      microcode: level('microcode'),
    },
    hwId: read(AMD_OID.hwId, 'hwID', hardwareId),
    productName: read(AMD_OID.productName, 'productName', decodeDerIa5String),
    cspId: read(AMD_OID.cspId, 'cspId', decodeDerIa5String),
  }
}

/** The extensions as AMD's KDS writes them, for the stand-in's VCEK and VLEK. */
export function encodeAmdExtensions(ext: AmdKeyExtensions): CertificateExtension[] {
  const out: CertificateExtension[] = [
    { oid: AMD_OID.structVersion, critical: false, value: encodeDerInteger(1) },
  ]
  if (ext.productName !== undefined)
    out.push({ oid: AMD_OID.productName, critical: false, value: encodeDerIa5String(ext.productName) })
  for (const [name, oid] of Object.entries(TCB_OIDS))
    out.push({ oid, critical: false, value: encodeDerInteger(ext.tcb[name as keyof TcbLevels]) })
  // the KDS puts the 64 hwID bytes into extnValue without an OCTET STRING tag
  if (ext.hwId) out.push({ oid: AMD_OID.hwId, critical: false, value: new Uint8Array(ext.hwId) })
  if (ext.cspId !== undefined)
    out.push({ oid: AMD_OID.cspId, critical: false, value: encodeDerIa5String(ext.cspId) })
  return out
}

/** go-sev-guest's kds package notes the KDS's hwID has no tag: 64 raw bytes; a tagged form is accepted too. */
function hardwareId(value: Buffer): Buffer {
  if (value.length === HWID_BYTES) return value
  if (value.length === HWID_BYTES + 2 && value[0] === 0x04 && value[1] === HWID_BYTES)
    return value.subarray(2)
  throw new Error(`is ${value.length} bytes; expected the ${HWID_BYTES}-byte hardware ID`)
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))
