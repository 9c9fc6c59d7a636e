/**
 * The certificate table SEV firmware returns with an extended guest report (GHCB spec, "SNP
 * Extended Guest Request"): entries of {GUID (16 bytes), offset (u32 LE), length (u32 LE)}, ended by
 * an all-zero entry, offsets counted from the table's start. GUIDs are in RFC 4122 byte order, as
 * go-sev-guest's abi package reads them.
 */
import { AttestationError } from '../errors.js'

export interface SnpCertificates {
  vcek?: Buffer
  vlek?: Buffer
  ask?: Buffer
  asvk?: Buffer
  ark?: Buffer
}
export type SnpCertificateKind = keyof SnpCertificates

/** GHCB spec GUIDs. The ASVK has none of its own there; go-sev-guest files it under the ASK's. */
export const CERTIFICATE_GUIDS: Readonly<Record<Exclude<SnpCertificateKind, 'asvk'>, string>> = {
  vcek: '63da758d-e664-4564-adc5-f4b93be8accd',
  vlek: 'a8074bc2-a25a-483e-aae6-39c045a0b8a1',
  ask: '4ab7b379-bbac-4fe4-a02f-05aef327c782',
  ark: 'c0b406a4-a803-4952-9743-3fb6014cd0ae',
}
const ENTRY_SIZE = 24
/** A handful of certificates fit; more entries than this is not a table SEV firmware writes. */
const MAX_ENTRIES = 16
const MAX_CERTIFICATE_BYTES = 16 * 1024

const malformed = (why: string) => new AttestationError(`malformed SEV-SNP certificate table: ${why}`)
const guidText = (b: Buffer) =>
  [b.subarray(0, 4), b.subarray(4, 6), b.subarray(6, 8), b.subarray(8, 10), b.subarray(10, 16)]
    .map((part) => part.toString('hex'))
    .join('-')
const KIND_BY_GUID = new Map(Object.entries(CERTIFICATE_GUIDS).map(([k, g]) => [g, k as SnpCertificateKind]))

/**
 * The certificates of the table by kind. A certificate under the ASK GUID is reported as `ask`
 * (whether it is really an ASVK is for the chain check to find out); unknown GUIDs are skipped.
 */
export function parseCertificateTable(table: Buffer): SnpCertificates {
  const out: SnpCertificates = {}
  for (let index = 0; ; index++) {
    const at = index * ENTRY_SIZE
    if (index >= MAX_ENTRIES) throw malformed(`more than ${MAX_ENTRIES} entries`)
    if (at + ENTRY_SIZE > table.length)
      throw malformed(
        `entry ${index} (offset ${at}) runs past the table's ${table.length} bytes; no zero entry ends it`,
      )
    const guid = guidText(table.subarray(at, at + 16))
    const offset = table.readUInt32LE(at + 16)
    const length = table.readUInt32LE(at + 20)
    if (offset === 0 && length === 0 && /^[0-]+$/.test(guid)) return out
    const headerEnd = (index + 2) * ENTRY_SIZE // this entry, at least the terminator
    if (offset < headerEnd)
      throw malformed(
        `entry ${index} (${guid}): offset ${offset} points into the entry list (${headerEnd} bytes at least)`,
      )
    if (length === 0 || length > MAX_CERTIFICATE_BYTES)
      throw malformed(`entry ${index} (${guid}): length ${length}, expected 1 to ${MAX_CERTIFICATE_BYTES}`)
    if (offset + length > table.length)
      throw malformed(
        `entry ${index} (${guid}): bytes ${offset}–${offset + length} lie outside the table's ${table.length} bytes`,
      )
    const kind = KIND_BY_GUID.get(guid)
    if (!kind) continue
    if (out[kind]) throw malformed(`entry ${index}: a second ${kind.toUpperCase()} (GUID ${guid})`)
    out[kind] = Buffer.from(table.subarray(offset, offset + length))
  }
}

/** The table as SEV firmware lays it out: entries, the zero entry, then the DER certificates. */
export function encodeCertificateTable(certs: SnpCertificates): Buffer {
  const entries = (['vcek', 'vlek', 'ask', 'asvk', 'ark'] as const).flatMap((kind) => {
    const der = certs[kind]
    const guid = CERTIFICATE_GUIDS[kind === 'asvk' ? 'ask' : kind]
    return der ? [{ guid: Buffer.from(guid.replaceAll('-', ''), 'hex'), der }] : []
  })
  const header = Buffer.alloc((entries.length + 1) * ENTRY_SIZE)
  let offset = header.length
  entries.forEach((e, i) => {
    e.guid.copy(header, i * ENTRY_SIZE)
    header.writeUInt32LE(offset, i * ENTRY_SIZE + 16)
    header.writeUInt32LE(e.der.length, i * ENTRY_SIZE + 20)
    offset += e.der.length
  })
  return Buffer.concat([header, ...entries.map((e) => e.der)])
}
