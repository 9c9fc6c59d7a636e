/** Big-endian TPM 2.0 marshalling: a growing writer and a bounds-checked reader. */

/** A TPM structure was malformed; the message names the field and the offset. */
export class TpmParseError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TpmParseError'
  }
}

export class TpmWriter {
  private readonly parts: Buffer[] = []

  u8(v: number): this {
    return this.push(Buffer.from([v & 0xff]))
  }
  u16(v: number): this {
    const b = Buffer.alloc(2)
    b.writeUInt16BE(v)
    return this.push(b)
  }
  u32(v: number): this {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(v >>> 0)
    return this.push(b)
  }
  bytes(b: Uint8Array): this {
    return this.push(Buffer.from(b))
  }
  /** TPM2B: a u16 size then the bytes. */
  sized(b: Uint8Array): this {
    if (b.length > 0xffff) throw new RangeError(`TPM2B of ${b.length} bytes exceeds 65535`)
    return this.u16(b.length).bytes(b)
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.parts)
  }
  private push(b: Buffer): this {
    this.parts.push(b)
    return this
  }
}

export class TpmReader {
  private offset = 0

  constructor(
    private readonly buf: Buffer,
    /** Names the structure in errors, e.g. "TPMS_ATTEST". */
    private readonly what: string,
  ) {}

  get remaining(): number {
    return this.buf.length - this.offset
  }
  get position(): number {
    return this.offset
  }

  u8(field: string): number {
    return this.take(1, field).readUInt8(0)
  }
  u16(field: string): number {
    return this.take(2, field).readUInt16BE(0)
  }
  u32(field: string): number {
    return this.take(4, field).readUInt32BE(0)
  }
  u64(field: string): bigint {
    return this.take(8, field).readBigUInt64BE(0)
  }
  bytes(n: number, field: string): Buffer {
    return this.take(n, field)
  }
  /** TPM2B: a u16 size then that many bytes. */
  sized(field: string, maxSize = 0xffff): Buffer {
    const size = this.u16(`${field}.size`)
    if (size > maxSize) this.fail(field, `size ${size} exceeds the maximum ${maxSize}`)
    return this.take(size, field)
  }
  /** The bytes consumed since an earlier position (the raw form of a structure just read). */
  since(start: number): Buffer {
    return this.buf.subarray(start, this.offset)
  }
  /** Throws unless every byte was consumed, so trailing garbage is refused. */
  end(): void {
    if (this.remaining !== 0) this.fail('end', `${this.remaining} unexpected trailing bytes`)
  }
  fail(field: string, why: string): never {
    throw new TpmParseError(`${this.what}: ${field} at offset ${this.offset}: ${why}`)
  }

  private take(n: number, field: string): Buffer {
    if (n > this.remaining) this.fail(field, `needs ${n} bytes, only ${this.remaining} left`)
    const out = this.buf.subarray(this.offset, this.offset + n)
    this.offset += n
    return out
  }
}
