/**
 * Reading fields out of asn1js's decode of a DER structure by their place in its ASN.1 definition,
 * for the structures read on every join (a peer's certificate, a kubelet CSR). asn1-schema's
 * AsnConvert.parse decodes the same tree and then compares it against the whole schema and maps it
 * into classes, at three times the cost. Every element read is checked for the type its place
 * requires; a mismatch throws an Error that names the element.
 */
import * as asn1js from 'asn1js'

export type DerBlock = asn1js.AsnType

const UNIVERSAL = 1
const CONTEXT = 3
const SEQUENCE = 16
const SET = 17

/**
 * The one element the bytes hold; throws on what BER cannot decode and on bytes after it. The
 * contents of OCTET and BIT STRINGs stay bytes: asn1js would otherwise try to decode each as
 * DER too (a 3 kB attestation document, a signature), most of the cost of a certificate.
 */
export function decodeDer(bytes: Uint8Array, what: string): DerBlock {
  const decoded = asn1js.fromBER(bytes, { copyInput: false, parseEmbedded: false })
  if (decoded.offset === -1) throw new Error(`${what} is not DER: ${decoded.result.error}`)
  if (decoded.offset !== bytes.length) throw new Error(`bytes follow the ${what}`)
  return decoded.result
}

/**
 * Bytes the first element spans by its header (a one-octet tag, a definite length of at most four
 * octets), without decoding its contents; NaN when the header is not one.
 */
export function elementLength(der: Uint8Array): number {
  const first = der[1] ?? 0
  if (der.length < 2 || ((der[0] ?? 0) & 0x1f) === 0x1f) return NaN
  if (first < 0x80) return 2 + first
  const octets = first & 0x7f
  if (octets === 0 || octets > 4 || der.length < 2 + octets) return NaN
  return 2 + octets + Buffer.from(der.buffer, der.byteOffset, der.byteLength).readUIntBE(2, octets)
}

/** The elements of a SEQUENCE. */
export function children(block: DerBlock | undefined, what: string): DerBlock[] {
  if (!isUniversal(block, SEQUENCE, true)) throw new Error(`${what} is not a SEQUENCE`)
  return (block as asn1js.Sequence).valueBlock.value
}

export const isUniversal = (b: DerBlock | undefined, tag: number, constructed = false): boolean =>
  b?.idBlock.tagClass === UNIVERSAL && b.idBlock.tagNumber === tag && b.idBlock.isConstructed === constructed

export const isContext = (b: DerBlock | undefined, tag: number, constructed = true): boolean =>
  b?.idBlock.tagClass === CONTEXT && b.idBlock.tagNumber === tag && b.idBlock.isConstructed === constructed

/** The whole encoding of an element (tag, length and contents), as the input carried it. */
export const encodingOf = (b: DerBlock): Buffer => Buffer.from(b.valueBeforeDecodeView)

export function oidOf(block: DerBlock | undefined, what: string): string {
  if (!(block instanceof asn1js.ObjectIdentifier)) throw new Error(`${what} is not an OBJECT IDENTIFIER`)
  return block.valueBlock.toString()
}

/** Name ::= SEQUENCE OF SET OF { type OID, value }: the values of every attribute of one type, in order. */
export function nameValues(name: DerBlock | undefined, oid: string, what: string): string[] {
  const values: string[] = []
  for (const rdn of children(name, what)) {
    if (!isUniversal(rdn, SET, true)) throw new Error(`${what} holds something other than a SET`)
    for (const atv of (rdn as asn1js.Set).valueBlock.value) {
      const [type, value] = children(atv, `${what} attribute`)
      if (oidOf(type, `${what} attribute type`) !== oid) continue
      if (!(value instanceof asn1js.BaseStringBlock))
        throw new Error(`${what} attribute ${oid} is not a string`)
      values.push(value.getValue())
    }
  }
  return values
}

export interface DerExtension {
  oid: string
  critical: boolean
  /** The DER that extnValue's OCTET STRING wraps. */
  value: Buffer
}

/** Extensions ::= SEQUENCE OF Extension { extnID OID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING } */
export function extensionsOf(list: DerBlock | undefined): DerExtension[] {
  return children(list, 'Extensions').map((ext) => {
    const parts = children(ext, 'Extension')
    const oid = oidOf(parts[0], 'extension extnID')
    const critical = parts.length === 3 ? parts[1] : undefined
    const value = parts[parts.length - 1]
    if (critical !== undefined && !(critical instanceof asn1js.Boolean))
      throw new Error(`extension ${oid}: critical is not a BOOLEAN`)
    if (parts.length < 2 || parts.length > 3 || !isUniversal(value, 4))
      throw new Error(`extension ${oid}: extnValue is not a primitive OCTET STRING`)
    return {
      oid,
      critical: critical?.valueBlock.value ?? false,
      value: Buffer.from((value as asn1js.OctetString).valueBlock.valueHexView),
    }
  })
}
