/** Bounded reads of little-endian structures; every failure names the field and its offset. */
import { AttestationError } from '../errors.js'

/** A field of a fixed layout: its name as Intel's documents spell it, offset and size in bytes. */
export interface FieldSpec {
  name: string
  offset: number
  size: number
}

export class StructReader {
  constructor(
    private readonly raw: Buffer,
    /** Names the structure in every message, e.g. "TDX quote". */
    private readonly what: string,
    /** Where `raw` starts inside the outermost structure, so offsets in messages are absolute. */
    private readonly base = 0,
  ) {}

  get length(): number {
    return this.raw.length
  }

  /** A copy of `size` bytes at `offset`, refused when they run past the end. */
  bytes(name: string, offset: number, size: number): Buffer {
    if (offset < 0 || size < 0 || offset + size > this.raw.length)
      throw new AttestationError(
        `malformed ${this.what}: ${name} at offset ${this.base + offset} needs ${size} bytes, but only ${Math.max(0, this.raw.length - offset)} remain`,
      )
    return Buffer.from(this.raw.subarray(offset, offset + size))
  }

  field(spec: FieldSpec): Buffer {
    return this.bytes(spec.name, spec.offset, spec.size)
  }

  u16(name: string, offset: number): number {
    return this.bytes(name, offset, 2).readUInt16LE(0)
  }

  u32(name: string, offset: number): number {
    return this.bytes(name, offset, 4).readUInt32LE(0)
  }

  refuse(name: string, offset: number, why: string): AttestationError {
    return new AttestationError(`malformed ${this.what}: ${name} at offset ${this.base + offset} ${why}`)
  }
}

/** Writes each field's bytes at its offset; a missing field stays zero, a wrong length is a bug. */
export function writeFields(
  size: number,
  specs: readonly FieldSpec[],
  values: Record<string, Buffer | undefined>,
): Buffer {
  const out = Buffer.alloc(size)
  for (const spec of specs) {
    const value = values[spec.name]
    if (value === undefined) continue
    if (value.length !== spec.size)
      throw new RangeError(`${spec.name} must be ${spec.size} bytes, got ${value.length}`)
    value.copy(out, spec.offset)
  }
  return out
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
