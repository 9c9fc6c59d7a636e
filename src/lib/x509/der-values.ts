/**
 * Single DER values as private certificate extensions carry them (AMD's VCEK puts an INTEGER or
 * an IA5String straight into extnValue). Decoding is strict: the bytes must be exactly the DER
 * re-encoding of what was read, so trailing bytes and non-minimal lengths are refused.
 */
import { AsnConvert, AsnProp, AsnPropTypes, AsnType, AsnTypeTypes } from '@peculiar/asn1-schema'

// A one-alternative CHOICE lets asn1-schema read a bare primitive; decorators applied by hand
// because the project compiles without experimentalDecorators.
class DerInteger {
  value = 0
}
AsnType({ type: AsnTypeTypes.Choice })(DerInteger)
AsnProp({ type: AsnPropTypes.Integer })(DerInteger.prototype, 'value')

class DerIa5String {
  value = ''
}
AsnType({ type: AsnTypeTypes.Choice })(DerIa5String)
AsnProp({ type: AsnPropTypes.IA5String })(DerIa5String.prototype, 'value')

export function encodeDerInteger(value: number): Uint8Array {
  const v = new DerInteger()
  v.value = value
  return new Uint8Array(AsnConvert.serialize(v))
}

export function encodeDerIa5String(value: string): Uint8Array {
  const v = new DerIa5String()
  v.value = value
  return new Uint8Array(AsnConvert.serialize(v))
}

/** A DER INTEGER that fits a JavaScript number; throws on anything else. */
export function decodeDerInteger(der: Uint8Array): number {
  const value = strictly(der, DerInteger, 'INTEGER').value
  if (!Number.isSafeInteger(value)) throw new Error('INTEGER is too large')
  return value
}

/** A DER IA5String; throws on anything else. */
export function decodeDerIa5String(der: Uint8Array): string {
  return strictly(der, DerIa5String, 'IA5String').value
}

function strictly<T extends object>(der: Uint8Array, type: new () => T, name: string): T {
  let parsed: T
  try {
    parsed = AsnConvert.parse(der, type)
  } catch {
    throw new Error(`not a DER ${name}`)
  }
  if (!Buffer.from(AsnConvert.serialize(parsed)).equals(Buffer.from(der)))
    throw new Error(`not a DER ${name} (trailing bytes or a non-minimal encoding)`)
  return parsed
}
