/** Decodes a TPM_RC into the error it names and the handle, session or parameter it blames (Part 2 §6.6). */

/** Format-one errors (bit 7 set): the ones a credential activation or a key creation can hit. */
const FMT1_ERRORS: Record<number, string> = {
  0x01: 'ASYMMETRIC',
  0x02: 'ATTRIBUTES',
  0x03: 'HASH',
  0x04: 'VALUE',
  0x05: 'HIERARCHY',
  0x07: 'KEY_SIZE',
  0x08: 'MGF',
  0x09: 'MODE',
  0x0a: 'TYPE',
  0x0b: 'HANDLE',
  0x0c: 'KDF',
  0x0d: 'RANGE',
  0x0e: 'AUTH_FAIL',
  0x0f: 'NONCE',
  0x10: 'PP',
  0x12: 'SCHEME',
  0x15: 'SIZE',
  0x16: 'SYMMETRIC',
  0x17: 'TAG',
  0x18: 'SELECTOR',
  0x1a: 'INSUFFICIENT',
  0x1b: 'SIGNATURE',
  0x1c: 'KEY',
  0x1d: 'POLICY_FAIL',
  0x1f: 'INTEGRITY',
  0x20: 'TICKET',
  0x21: 'RESERVED_BITS',
  0x22: 'BAD_AUTH',
  0x23: 'EXPIRED',
  0x24: 'POLICY_CC',
  0x25: 'BINDING',
  0x26: 'CURVE',
  0x27: 'ECC_POINT',
}

/** Format-zero errors and warnings this client meets. */
const FMT0_CODES: Record<number, string> = {
  0x100: 'INITIALIZE',
  0x101: 'FAILURE',
  0x103: 'SEQUENCE',
  0x143: 'AUTH_MISSING',
  0x149: 'AUTH_TYPE',
  0x14b: 'AUTH_UNAVAILABLE',
  0x154: 'COMMAND_SIZE',
  0x155: 'COMMAND_CODE',
  0x156: 'AUTHSIZE',
  0x15f: 'SENSITIVE',
  0x902: 'OBJECT_MEMORY',
  0x903: 'SESSION_MEMORY',
  0x908: 'YIELDED',
  0x90a: 'TESTING',
  0x921: 'LOCKOUT',
  0x922: 'RETRY',
}

const RC_FMT1 = 0x080
const RC_P = 0x040
const RC_S = 0x800

export interface ResponseCode {
  /** TPM_RC_<name> without the prefix, e.g. "INTEGRITY", or "0x…" when unknown. */
  name: string
  /** Which parameter, handle or session (1-based) the TPM blames, for format-one errors. */
  parameter?: number
  handle?: number
  session?: number
}

export function decodeResponseCode(rc: number): ResponseCode {
  if ((rc & RC_FMT1) === 0) return { name: FMT0_CODES[rc] ?? `0x${rc.toString(16)}` }
  const name = FMT1_ERRORS[rc & 0x3f] ?? `0x${rc.toString(16)}`
  const n = (rc >> 8) & 0xf
  if (rc & RC_P) return { name, parameter: n }
  if (rc & RC_S) return { name, session: n & 0x7 }
  return n === 0 ? { name } : { name, handle: n & 0x7 }
}

/** "TPM_RC_INTEGRITY on parameter 1" */
export function describeResponseCode(rc: number): string {
  const d = decodeResponseCode(rc)
  const where =
    d.parameter !== undefined
      ? ` on parameter ${d.parameter}`
      : d.handle !== undefined
        ? ` on handle ${d.handle}`
        : d.session !== undefined
          ? ` on session ${d.session}`
          : ''
  return `TPM_RC_${d.name}${where} (0x${rc.toString(16)})`
}
