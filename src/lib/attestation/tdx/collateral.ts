/**
 * TDX collateral as Intel PCS v4 serves it: TCB info (/tdx/certification/v4/tcb?fmspc=…) and the
 * TD QE identity (/tdx/certification/v4/qe/identity), each a JSON body whose "signature" covers
 * the exact text of its "tcbInfo" / "enclaveIdentity" member, plus the issuer chain PEM from the
 * response header (URL-decoded). Parsing checks shape only; verify.ts checks signatures.
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { AttestationError } from '../errors.js'
import { topLevelMembers } from './json-text.js'

/** Real TCB info bodies are a few KiB to a few tens of KiB. */
export const MAX_COLLATERAL_FILE_BYTES = 256 * 1024
const MAX_ISSUER_CERTIFICATES = 4
const MAX_TCB_LEVELS = 256

/** The file names readTdxCollateral expects in its directory. */
export const TDX_COLLATERAL_FILES = {
  tcbInfo: 'tcb-info.json',
  tcbInfoIssuerChain: 'tcb-info-issuer-chain.pem',
  qeIdentity: 'qe-identity.json',
  qeIdentityIssuerChain: 'qe-identity-issuer-chain.pem',
} as const

export type TdxCollateralFiles = Record<keyof typeof TDX_COLLATERAL_FILES, string>

export interface SignedMember {
  /** The exact JSON text Intel signed. */
  text: string
  /** Raw r ‖ s. */
  signature: Buffer
  issuerChain: X509Certificate[]
}

export interface TdxTcbLevel {
  sgxTcbComponents: number[]
  pceSvn: number
  tdxTcbComponents: number[]
  tcbDate: string
  tcbStatus: string
  advisoryIds: string[]
}

export interface TdxModuleIdentity {
  id: string
  mrSigner: Buffer
  attributes: Buffer
  attributesMask: Buffer
  tcbLevels: { isvSvn: number; tcbStatus: string }[]
}

export interface TdxTcbInfo {
  id: string
  version: number
  issueDate: Date
  nextUpdate: Date
  fmspc: string
  pceId: string
  tdxModule?: { mrSigner: Buffer; attributes: Buffer; attributesMask: Buffer }
  tdxModuleIdentities: TdxModuleIdentity[]
  tcbLevels: TdxTcbLevel[]
}

export interface TdQeIdentity {
  id: string
  version: number
  issueDate: Date
  nextUpdate: Date
  miscSelect: Buffer
  miscSelectMask: Buffer
  attributes: Buffer
  attributesMask: Buffer
  mrSigner: Buffer
  isvProdId: number
  tcbLevels: { isvSvn: number; tcbStatus: string }[]
}

export interface TdxCollateral {
  tcbInfo: TdxTcbInfo
  tcbInfoSigned: SignedMember
  qeIdentity: TdQeIdentity
  qeIdentitySigned: SignedMember
}

export function parseTdxCollateral(files: TdxCollateralFiles): TdxCollateral {
  const tcb = signedBody(files.tcbInfo, 'tcbInfo', files.tcbInfoIssuerChain, TDX_COLLATERAL_FILES.tcbInfo)
  const qe = signedBody(
    files.qeIdentity,
    'enclaveIdentity',
    files.qeIdentityIssuerChain,
    TDX_COLLATERAL_FILES.qeIdentity,
  )
  return {
    tcbInfo: parseTcbInfo(new Json(TDX_COLLATERAL_FILES.tcbInfo), tcb.member),
    tcbInfoSigned: tcb.signed,
    qeIdentity: parseQeIdentity(new Json(TDX_COLLATERAL_FILES.qeIdentity), qe.member),
    qeIdentitySigned: qe.signed,
  }
}

/**
 * The four files of TDX_COLLATERAL_FILES in `dir`, each at most MAX_COLLATERAL_FILE_BYTES. Read
 * synchronously: config loading is synchronous, and these files are small.
 */
export function readTdxCollateral(dir: string): TdxCollateral {
  const entries = Object.entries(TDX_COLLATERAL_FILES).map(
    ([key, name]) => [key, readBounded(path.join(dir, name))] as const,
  )
  return parseTdxCollateral(Object.fromEntries(entries) as TdxCollateralFiles)
}

function readBounded(file: string): string {
  let data: Buffer
  try {
    const size = statSync(file).size
    if (size > MAX_COLLATERAL_FILE_BYTES)
      throw new AttestationError(`TDX collateral ${file} is larger than ${MAX_COLLATERAL_FILE_BYTES} bytes`)
    data = readFileSync(file)
  } catch (cause: unknown) {
    if (cause instanceof AttestationError) throw cause
    throw new AttestationError(
      `reading TDX collateral ${file}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    )
  }
  if (data.length > MAX_COLLATERAL_FILE_BYTES)
    throw new AttestationError(`TDX collateral ${file} is larger than ${MAX_COLLATERAL_FILE_BYTES} bytes`)
  return data.toString('utf8')
}

function signedBody(
  body: string,
  member: string,
  chainPem: string,
  file: string,
): { member: unknown; signed: SignedMember } {
  const j = new Json(file)
  if (body.length > MAX_COLLATERAL_FILE_BYTES)
    throw j.bad('', `is longer than ${MAX_COLLATERAL_FILE_BYTES} bytes`)
  let doc: unknown
  try {
    doc = JSON.parse(body) as unknown
  } catch (err: unknown) {
    throw j.bad('', `is not JSON (${err instanceof Error ? err.message : String(err)})`)
  }
  const top = j.object(doc, '')
  const members = topLevelMembers(body)
  if (!members) throw j.bad('', 'names a member twice')
  const text = members.get(member)
  if (text === undefined) throw j.bad(member, 'is missing')
  const signature = j.hex(top.signature, 'signature', 64)
  return {
    // the values checked are read from the very text the signature covers
    member: JSON.parse(text) as unknown,
    signed: { text, signature, issuerChain: parseIssuerChain(chainPem, `${file} issuer chain`) },
  }
}

function parseIssuerChain(pem: string, what: string): X509Certificate[] {
  if (pem.length > MAX_COLLATERAL_FILE_BYTES)
    throw new AttestationError(`malformed ${what}: longer than ${MAX_COLLATERAL_FILE_BYTES} bytes`)
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []
  if (blocks.length === 0 || blocks.length > MAX_ISSUER_CERTIFICATES)
    throw new AttestationError(
      `malformed ${what}: holds ${blocks.length} PEM certificates, expected 1 to ${MAX_ISSUER_CERTIFICATES}`,
    )
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b)
    } catch (err: unknown) {
      throw new AttestationError(
        `malformed ${what}: certificate ${i} (${err instanceof Error ? err.message : String(err)})`,
      )
    }
  })
}

function parseTcbInfo(j: Json, value: unknown): TdxTcbInfo {
  const o = j.object(value, 'tcbInfo')
  const p = (k: string) => `tcbInfo.${k}`
  const module = o.tdxModule === undefined ? undefined : j.object(o.tdxModule, p('tdxModule'))
  return {
    id: j.string(o.id, p('id')),
    version: j.int(o.version, p('version'), 0xff),
    issueDate: j.date(o.issueDate, p('issueDate')),
    nextUpdate: j.date(o.nextUpdate, p('nextUpdate')),
    fmspc: j.hex(o.fmspc, p('fmspc'), 6).toString('hex'),
    pceId: j.hex(o.pceId, p('pceId'), 2).toString('hex'),
    tdxModule: module && {
      mrSigner: j.hex(module.mrsigner, p('tdxModule.mrsigner'), 48),
      attributes: j.hex(module.attributes, p('tdxModule.attributes'), 8),
      attributesMask: j.hex(module.attributesMask, p('tdxModule.attributesMask'), 8),
    },
    tdxModuleIdentities: j.list(o.tdxModuleIdentities ?? [], p('tdxModuleIdentities'), (v, at) => {
      const m = j.object(v, at)
      return {
        id: j.string(m.id, `${at}.id`),
        mrSigner: j.hex(m.mrsigner, `${at}.mrsigner`, 48),
        attributes: j.hex(m.attributes, `${at}.attributes`, 8),
        attributesMask: j.hex(m.attributesMask, `${at}.attributesMask`, 8),
        tcbLevels: isvLevels(j, m.tcbLevels, `${at}.tcbLevels`),
      }
    }),
    tcbLevels: j.list(o.tcbLevels, p('tcbLevels'), (v, at) => {
      const level = j.object(v, at)
      const tcb = j.object(level.tcb, `${at}.tcb`)
      return {
        sgxTcbComponents: svns(j, tcb.sgxtcbcomponents, `${at}.tcb.sgxtcbcomponents`),
        pceSvn: j.int(tcb.pcesvn, `${at}.tcb.pcesvn`, 0xffff),
        tdxTcbComponents: svns(j, tcb.tdxtcbcomponents, `${at}.tcb.tdxtcbcomponents`),
        tcbDate: j.string(level.tcbDate, `${at}.tcbDate`),
        tcbStatus: j.string(level.tcbStatus, `${at}.tcbStatus`),
        advisoryIds: j.list(level.advisoryIDs ?? [], `${at}.advisoryIDs`, (a, ai) => j.string(a, ai)),
      }
    }),
  }
}

function parseQeIdentity(j: Json, value: unknown): TdQeIdentity {
  const o = j.object(value, 'enclaveIdentity')
  const p = (k: string) => `enclaveIdentity.${k}`
  return {
    id: j.string(o.id, p('id')),
    version: j.int(o.version, p('version'), 0xff),
    issueDate: j.date(o.issueDate, p('issueDate')),
    nextUpdate: j.date(o.nextUpdate, p('nextUpdate')),
    miscSelect: j.hex(o.miscselect, p('miscselect'), 4),
    miscSelectMask: j.hex(o.miscselectMask, p('miscselectMask'), 4),
    attributes: j.hex(o.attributes, p('attributes'), 16),
    attributesMask: j.hex(o.attributesMask, p('attributesMask'), 16),
    mrSigner: j.hex(o.mrsigner, p('mrsigner'), 32),
    isvProdId: j.int(o.isvprodid, p('isvprodid'), 0xffff),
    tcbLevels: isvLevels(j, o.tcbLevels, p('tcbLevels')),
  }
}

function isvLevels(j: Json, value: unknown, at: string): { isvSvn: number; tcbStatus: string }[] {
  return j.list(value, at, (v, ai) => {
    const level = j.object(v, ai)
    return {
      isvSvn: j.int(j.object(level.tcb, `${ai}.tcb`).isvsvn, `${ai}.tcb.isvsvn`, 0xffff),
      tcbStatus: j.string(level.tcbStatus, `${ai}.tcbStatus`),
    }
  })
}

/** Exactly 16 { "svn": n } components. */
function svns(j: Json, value: unknown, at: string): number[] {
  const list = j.list(value, at, (v, ai) => j.int(j.object(v, ai).svn, `${ai}.svn`, 0xff))
  if (list.length !== 16) throw j.bad(at, `has ${list.length} components, expected 16`)
  return list
}

/** Typed reads of untrusted JSON; every refusal names the file and the JSON path. */
class Json {
  constructor(private readonly file: string) {}
  bad(at: string, why: string): AttestationError {
    return new AttestationError(`malformed TDX collateral ${this.file}: ${at || 'body'} ${why}`)
  }
  object(v: unknown, at: string): Record<string, unknown> {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw this.bad(at, 'must be an object')
    return v as Record<string, unknown>
  }
  string(v: unknown, at: string): string {
    if (typeof v !== 'string' || v.length > 1024) throw this.bad(at, 'must be a string')
    return v
  }
  int(v: unknown, at: string, max: number): number {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max)
      throw this.bad(at, `must be an integer 0–${max}`)
    return v
  }
  hex(v: unknown, at: string, size: number): Buffer {
    if (typeof v !== 'string' || v.length !== size * 2 || !/^[0-9a-fA-F]*$/.test(v))
      throw this.bad(at, `must be ${size} bytes of hex`)
    return Buffer.from(v, 'hex')
  }
  date(v: unknown, at: string): Date {
    const d = new Date(this.string(v, at))
    if (Number.isNaN(d.getTime())) throw this.bad(at, 'must be an ISO 8601 date')
    return d
  }
  list<T>(v: unknown, at: string, each: (item: unknown, at: string) => T): T[] {
    if (!Array.isArray(v) || v.length > MAX_TCB_LEVELS)
      throw this.bad(at, `must be a list of at most ${MAX_TCB_LEVELS}`)
    return v.map((item: unknown, i) => each(item, `${at}[${i}]`))
  }
}
