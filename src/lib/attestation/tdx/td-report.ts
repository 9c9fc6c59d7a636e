/**
 * The 1024-byte TDREPORT_STRUCT a TD gets from TDG.MR.REPORT. Only the CPU can check its MAC; a
 * quoting enclave turns it into a signed quote (Azure: IMDS /acc/tdquote). Parsing checks what
 * can be checked off the CPU: size, report type and the two SHA-384 hashes over its parts.
 */
import { createHash } from 'node:crypto'
import { StructReader, hex, writeFields } from './bytes.js'
import { REPORT_TYPE_TDX, TD_INFO, TD_REPORT_FIELDS, TD_REPORT_SIZE, TEE_TCB_INFO } from './layout.js'
import type { TdQuoteBody } from './quote.js'

export interface TdReport {
  reportType: { type: number; subtype: number; version: number }
  cpuSvn: Buffer
  teeTcbInfoHash: Buffer
  teeInfoHash: Buffer
  reportData: Buffer
  mac: Buffer
  /** TEE_TCB_INFO.VALID: which of its fields are valid. */
  teeTcbInfoValid: Buffer
  teeTcbSvn: Buffer
  mrSeam: Buffer
  mrSignerSeam: Buffer
  seamAttributes: Buffer
  teeTcbSvn2: Buffer
  tdAttributes: Buffer
  xfam: Buffer
  mrTd: Buffer
  mrConfigId: Buffer
  mrOwner: Buffer
  mrOwnerConfig: Buffer
  rtmrs: [Buffer, Buffer, Buffer, Buffer]
  servTdHash: Buffer
}

/** What encodeTdReport takes: any field left out is zero; the hashes are computed. */
export type TdReportFields = Partial<Omit<TdReport, 'reportType' | 'teeTcbInfoHash' | 'teeInfoHash'>> & {
  reportType?: { subtype?: number; version?: number }
}

export function parseTdReport(raw: Buffer): TdReport {
  const r = new StructReader(raw, 'TD report')
  if (raw.length !== TD_REPORT_SIZE)
    throw r.refuse('TDREPORT_STRUCT', 0, `is ${raw.length} bytes, expected ${TD_REPORT_SIZE}`)
  const f = Object.fromEntries(TD_REPORT_FIELDS.map((s) => [s.name, r.field(s)])) as Record<string, Buffer>
  const get = (name: string) => f[name] as Buffer
  const type = get('reportType')
  if (type[0] !== REPORT_TYPE_TDX)
    throw r.refuse('REPORTTYPE.TYPE', 0, `is 0x${hex(type.subarray(0, 1))}, expected 0x81 (TDX)`)
  checkHash(r, raw, 'TEE_TCB_INFO_HASH', 32, TEE_TCB_INFO)
  checkHash(r, raw, 'TEE_INFO_HASH', 80, TD_INFO)
  return {
    reportType: { type: type[0] ?? 0, subtype: type[1] ?? 0, version: type[2] ?? 0 },
    cpuSvn: get('cpuSvn'),
    teeTcbInfoHash: get('teeTcbInfoHash'),
    teeInfoHash: get('teeInfoHash'),
    reportData: get('reportData'),
    mac: get('mac'),
    teeTcbInfoValid: get('teeTcbInfoValid'),
    teeTcbSvn: get('teeTcbSvn'),
    mrSeam: get('mrSeam'),
    mrSignerSeam: get('mrSignerSeam'),
    seamAttributes: get('seamAttributes'),
    teeTcbSvn2: get('teeTcbSvn2'),
    tdAttributes: get('tdAttributes'),
    xfam: get('xfam'),
    mrTd: get('mrTd'),
    mrConfigId: get('mrConfigId'),
    mrOwner: get('mrOwner'),
    mrOwnerConfig: get('mrOwnerConfig'),
    rtmrs: [get('rtmr0'), get('rtmr1'), get('rtmr2'), get('rtmr3')],
    servTdHash: get('servTdHash'),
  }
}

function checkHash(
  r: StructReader,
  raw: Buffer,
  name: string,
  offset: number,
  part: { offset: number; size: number },
): void {
  const want = sha384(raw.subarray(part.offset, part.offset + part.size))
  const found = raw.subarray(offset, offset + 48)
  if (!want.equals(found))
    throw r.refuse(name, offset, `is ${hex(found)}, but SHA-384 of the bytes it covers is ${hex(want)}`)
}

const sha384 = (b: Uint8Array) => createHash('sha384').update(b).digest()

/** A TD report with the given fields; the MAC cannot be made off the CPU and stays as given (zero by default). */
export function encodeTdReport(fields: TdReportFields): Buffer {
  const [rtmr0, rtmr1, rtmr2, rtmr3] = fields.rtmrs ?? []
  const type = Buffer.from([
    REPORT_TYPE_TDX,
    fields.reportType?.subtype ?? 0,
    fields.reportType?.version ?? 0,
    0,
  ])
  const { reportType: _type, rtmrs: _rtmrs, ...rest } = fields
  const out = writeFields(TD_REPORT_SIZE, TD_REPORT_FIELDS, {
    ...rest,
    reportType: type,
    rtmr0,
    rtmr1,
    rtmr2,
    rtmr3,
  })
  sha384(out.subarray(TEE_TCB_INFO.offset, TEE_TCB_INFO.offset + TEE_TCB_INFO.size)).copy(out, 32)
  sha384(out.subarray(TD_INFO.offset, TD_INFO.offset + TD_INFO.size)).copy(out, 80)
  return out
}

/** The quote body a quoting enclave makes of a TD report (TD 1.0 fields). */
export function tdReportToQuoteBody(report: TdReport): TdQuoteBody {
  return {
    teeTcbSvn: report.teeTcbSvn,
    mrSeam: report.mrSeam,
    mrSignerSeam: report.mrSignerSeam,
    seamAttributes: report.seamAttributes,
    tdAttributes: report.tdAttributes,
    xfam: report.xfam,
    mrTd: report.mrTd,
    mrConfigId: report.mrConfigId,
    mrOwner: report.mrOwner,
    mrOwnerConfig: report.mrOwnerConfig,
    rtmrs: report.rtmrs,
    reportData: report.reportData,
  }
}
