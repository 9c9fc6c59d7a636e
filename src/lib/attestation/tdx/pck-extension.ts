/**
 * The SGX extension of a PCK certificate (OID 1.2.840.113741.1.13.1): a SEQUENCE of
 * { OID, value } pairs naming the platform (FMSPC, PCEID) and the TCB the key was issued for
 * (16 SGX TCB component SVNs, PCESVN, CPUSVN). Decoded and encoded with @peculiar/asn1-schema.
 */
import type { X509Certificate } from 'node:crypto'
import {
  AsnArray,
  AsnChoiceType,
  AsnConvert,
  AsnProp,
  AsnPropTypes,
  AsnType,
  AsnTypeTypes,
} from '@peculiar/asn1-schema'
import { Certificate } from '@peculiar/asn1-x509'
import { AttestationError } from '../errors.js'
import { hex } from './bytes.js'

export const SGX_EXTENSION_OID = '1.2.840.113741.1.13.1'
const OID = {
  ppid: `${SGX_EXTENSION_OID}.1`,
  tcb: `${SGX_EXTENSION_OID}.2`,
  pceSvn: `${SGX_EXTENSION_OID}.2.17`,
  cpuSvn: `${SGX_EXTENSION_OID}.2.18`,
  pceId: `${SGX_EXTENSION_OID}.3`,
  fmspc: `${SGX_EXTENSION_OID}.4`,
  sgxType: `${SGX_EXTENSION_OID}.5`,
} as const
const tcbComponentOid = (i: number) => `${OID.tcb}.${i + 1}`

export interface PckExtension {
  /** 6 bytes, hex, lower case: the platform family tcbInfo is issued for. */
  fmspc: string
  pceId: string
  /** SGX TCB component SVNs 1–16. */
  tcbComponents: number[]
  pceSvn: number
  cpuSvn: Buffer
}

// The schema classes: the decorators are applied by call, as this project compiles without
// TypeScript's legacy decorators. SgxValue is the CHOICE of every value type the extension holds.
class SgxValue {
  integer?: number
  octets?: ArrayBuffer
  enumerated?: number
  boolean?: boolean
  entries?: SgxEntries
}
class SgxEntry {
  type = ''
  value = new SgxValue()
}
class SgxEntries extends AsnArray<SgxEntry> {}
AsnChoiceType()(SgxValue)
AsnProp({ type: AsnPropTypes.Integer, optional: true })(SgxValue.prototype, 'integer')
AsnProp({ type: AsnPropTypes.OctetString, optional: true })(SgxValue.prototype, 'octets')
AsnProp({ type: AsnPropTypes.Enumerated, optional: true })(SgxValue.prototype, 'enumerated')
AsnProp({ type: AsnPropTypes.Boolean, optional: true })(SgxValue.prototype, 'boolean')
AsnProp({ type: SgxEntries, optional: true })(SgxValue.prototype, 'entries')
AsnType({ type: AsnTypeTypes.Sequence })(SgxEntry)
AsnProp({ type: AsnPropTypes.ObjectIdentifier })(SgxEntry.prototype, 'type')
AsnProp({ type: SgxValue })(SgxEntry.prototype, 'value')
AsnType({ type: AsnTypeTypes.Sequence, itemType: SgxEntry })(SgxEntries)

const refuse = (why: string) =>
  new AttestationError(`PCK certificate SGX extension (${SGX_EXTENSION_OID}): ${why}`)

/**
 * Decoding with asn1-schema costs ~3 ms, more than all signature checks of a quote together,
 * while a cluster sees a handful of PCK certificates. Decoded extensions are kept by the
 * certificate's SHA-256 fingerprint: the same DER always decodes to the same values.
 */
const decoded = new Map<string, PckExtension>()
const MAX_DECODED = 64

/** The SGX extension of the PCK leaf certificate; refused when missing or malformed. */
export function pckExtensionOf(cert: X509Certificate): PckExtension {
  const key = cert.fingerprint256
  let ext = decoded.get(key)
  if (!ext) {
    ext = decodeFromCertificate(cert)
    if (decoded.size >= MAX_DECODED) decoded.delete(decoded.keys().next().value as string)
    decoded.set(key, ext)
  }
  return { ...ext, tcbComponents: [...ext.tcbComponents], cpuSvn: Buffer.from(ext.cpuSvn) }
}

function decodeFromCertificate(cert: X509Certificate): PckExtension {
  let value: ArrayBuffer | undefined
  try {
    const parsed = AsnConvert.parse(cert.raw, Certificate)
    const ext = parsed.tbsCertificate.extensions?.find((e) => e.extnID === SGX_EXTENSION_OID)
    value = ext?.extnValue.buffer
  } catch (err: unknown) {
    throw refuse(`the certificate cannot be decoded (${err instanceof Error ? err.message : String(err)})`)
  }
  if (!value) throw refuse('the PCK leaf certificate has none')
  return decodePckExtension(Buffer.from(value))
}

export function decodePckExtension(der: Buffer): PckExtension {
  let entries: SgxEntries
  try {
    entries = AsnConvert.parse(der, SgxEntries, { berOptions: { maxDepth: 8, maxNodes: 512 } })
  } catch (err: unknown) {
    throw refuse(`not DER (${err instanceof Error ? err.message : String(err)})`)
  }
  const top = byOid(entries, 'SGX extension')
  const tcb = byOid(need(top, OID.tcb, 'TCB', 'entries') as SgxEntries, 'TCB')
  const octets = (map: Map<string, SgxValue>, oid: string, name: string, size: number) => {
    const v = Buffer.from(need(map, oid, name, 'octets') as ArrayBuffer)
    if (v.length !== size) throw refuse(`${name} is ${v.length} bytes, expected ${size}`)
    return v
  }
  const int = (map: Map<string, SgxValue>, oid: string, name: string, max: number) => {
    const v = need(map, oid, name, 'integer') as number
    if (!Number.isInteger(v) || v < 0 || v > max) throw refuse(`${name} is ${v}, outside 0–${max}`)
    return v
  }
  return {
    fmspc: hex(octets(top, OID.fmspc, 'FMSPC', 6)),
    pceId: hex(octets(top, OID.pceId, 'PCEID', 2)),
    tcbComponents: Array.from({ length: 16 }, (_, i) =>
      int(tcb, tcbComponentOid(i), `SGX TCB component ${i + 1}`, 255),
    ),
    pceSvn: int(tcb, OID.pceSvn, 'PCESVN', 0xffff),
    cpuSvn: octets(tcb, OID.cpuSvn, 'CPUSVN', 16),
  }
}

function byOid(entries: SgxEntries, what: string): Map<string, SgxValue> {
  const map = new Map<string, SgxValue>()
  for (const e of entries) {
    if (map.has(e.type)) throw refuse(`${what} names ${e.type} twice`)
    map.set(e.type, e.value)
  }
  return map
}

function need(map: Map<string, SgxValue>, oid: string, name: string, kind: keyof SgxValue): unknown {
  const v = map.get(oid)
  if (!v) throw refuse(`${name} (${oid}) is missing`)
  const value = v[kind]
  if (value === undefined)
    throw refuse(`${name} (${oid}) is not ${kind === 'entries' ? 'a SEQUENCE' : `an ${kind}`}`)
  return value
}

/** The DER of an SGX extension with these values (a stand-in PCK certificate carries it). */
export function encodePckExtension(ext: PckExtension & { ppid?: Buffer }): Buffer {
  const entry = (type: string, value: Partial<SgxValue>) =>
    Object.assign(new SgxEntry(), { type, value: Object.assign(new SgxValue(), value) })
  const buf = (b: Buffer) => new Uint8Array(b).buffer
  const tcb = new SgxEntries([
    ...ext.tcbComponents.map((svn, i) => entry(tcbComponentOid(i), { integer: svn })),
    entry(OID.pceSvn, { integer: ext.pceSvn }),
    entry(OID.cpuSvn, { octets: buf(ext.cpuSvn) }),
  ])
  const all = new SgxEntries([
    entry(OID.ppid, { octets: buf(ext.ppid ?? Buffer.alloc(16)) }),
    entry(OID.tcb, { entries: tcb }),
    entry(OID.pceId, { octets: buf(Buffer.from(ext.pceId, 'hex')) }),
    entry(OID.fmspc, { octets: buf(Buffer.from(ext.fmspc, 'hex')) }),
    entry(OID.sgxType, { enumerated: 0 }),
  ])
  return Buffer.from(AsnConvert.serialize(all))
}
