/**
 * Intel's collateral checks: signatures on TCB info and QE identity, their freshness, and the
 * TCB status evaluation Intel documents (go-tdx-guest testing/testdata/README.md restates it):
 * the first TCB level whose SGX components and PCESVN the PCK certificate meets and whose TDX
 * components the quote's TEE_TCB_SVN meets gives the platform status; the QE identity's first
 * level at or below the QE's ISVSVN gives the QE status.
 */
import { verify as verifySignature } from 'node:crypto'
import { AttestationError, EvidenceMismatchError } from '../errors.js'
import { hex } from './bytes.js'
import { verifyToPinnedRoot } from './chain.js'
import { oneLine } from '../one-line-name.js'
import type { SignedMember, TdQeIdentity, TdxCollateral, TdxTcbInfo, TdxTcbLevel } from './collateral.js'
import type { PckExtension } from './pck-extension.js'
import type { SgxReportBody, TdQuoteBody } from './quote.js'
import type { X509Certificate } from 'node:crypto'

const TCB_INFO_ID = 'TDX'
const TCB_INFO_VERSION = 3
const QE_IDENTITY_ID = 'TD_QE'
const QE_IDENTITY_VERSION = 2
const CONTEXT = 'TDX collateral'

/** Signatures chained to a pinned root, ids and versions, and issueDate ≤ now ≤ nextUpdate. */
export function checkCollateral(c: TdxCollateral, roots: readonly X509Certificate[], now: Date): void {
  checkSigned(c.tcbInfoSigned, roots, now, 'tcbInfo')
  checkSigned(c.qeIdentitySigned, roots, now, 'enclaveIdentity')
  const id = (field: string, want: string | number, found: string | number) => {
    if (want !== found) throw new EvidenceMismatchError(field, String(want), String(found), CONTEXT)
  }
  id('tcbInfo.id', TCB_INFO_ID, c.tcbInfo.id)
  id('tcbInfo.version', TCB_INFO_VERSION, c.tcbInfo.version)
  id('enclaveIdentity.id', QE_IDENTITY_ID, c.qeIdentity.id)
  id('enclaveIdentity.version', QE_IDENTITY_VERSION, c.qeIdentity.version)
  checkFresh('tcbInfo', c.tcbInfo, now)
  checkFresh('enclaveIdentity', c.qeIdentity, now)
}

function checkSigned(s: SignedMember, roots: readonly X509Certificate[], now: Date, member: string): void {
  const { leaf } = verifyToPinnedRoot(s.issuerChain, roots, now, `${member} issuer chain`)
  let ok: boolean
  try {
    ok = verifySignature(
      'sha256',
      Buffer.from(s.text, 'utf8'),
      { key: leaf.publicKey, dsaEncoding: 'ieee-p1363' },
      s.signature,
    )
  } catch {
    ok = false
  }
  if (!ok)
    throw new AttestationError(
      `${CONTEXT}: the signature of "${member}" does not verify with the TCB signing certificate ${oneLine(leaf.subject)} (tampered or from another signer)`,
    )
}

function checkFresh(member: string, doc: { issueDate: Date; nextUpdate: Date }, now: Date): void {
  if (doc.nextUpdate < now)
    throw new EvidenceMismatchError(
      `${member}.nextUpdate`,
      `after ${now.toISOString()}`,
      `${doc.nextUpdate.toISOString()} (expired; fetch fresh collateral from Intel PCS)`,
      CONTEXT,
    )
  if (doc.issueDate > now)
    throw new EvidenceMismatchError(
      `${member}.issueDate`,
      `before ${now.toISOString()}`,
      doc.issueDate.toISOString(),
      CONTEXT,
    )
}

/** The platform's TCB status; refuses when the quote is not of this TCB info's platform. */
export function evaluateTcb(info: TdxTcbInfo, pck: PckExtension, body: TdQuoteBody): string {
  if (info.fmspc !== pck.fmspc)
    throw new EvidenceMismatchError('FMSPC', info.fmspc, pck.fmspc, 'PCK certificate vs tcbInfo')
  if (info.pceId !== pck.pceId)
    throw new EvidenceMismatchError('PCEID', info.pceId, pck.pceId, 'PCK certificate vs tcbInfo')
  if (info.tdxModule) {
    const m = info.tdxModule
    if (!m.mrSigner.equals(body.mrSignerSeam))
      throw new EvidenceMismatchError(
        'MRSIGNERSEAM',
        hex(m.mrSigner),
        hex(body.mrSignerSeam),
        'tcbInfo.tdxModule',
      )
    const masked = Buffer.from(body.seamAttributes.map((b, i) => b & (m.attributesMask[i] ?? 0)))
    if (!masked.equals(m.attributes))
      throw new EvidenceMismatchError(
        'SEAMATTRIBUTES (masked)',
        hex(m.attributes),
        hex(masked),
        'tcbInfo.tdxModule',
      )
  }
  const svn = body.teeTcbSvn
  const moduleVersion = svn[1] ?? 0
  // a TDX 1.5 module (TEE_TCB_SVN[1] > 0) is judged by its module identity, not by components 0 and 1
  const from = moduleVersion > 0 ? 2 : 0
  const level = info.tcbLevels.find(
    (l) =>
      pck.tcbComponents.every((v, i) => v >= (l.sgxTcbComponents[i] ?? 0)) &&
      pck.pceSvn >= l.pceSvn &&
      l.tdxTcbComponents.every((v, i) => i < from || (svn[i] ?? 0) >= v),
  )
  if (!level)
    throw new EvidenceMismatchError(
      'TCB level',
      `one of the ${info.tcbLevels.length} levels of tcbInfo (fmspc ${info.fmspc}) at or below the platform`,
      `none: PCK SGX TCB components ${hex(Buffer.from(pck.tcbComponents))}, PCESVN ${pck.pceSvn}, TEE_TCB_SVN ${hex(svn)}`,
      'TDX TCB evaluation',
    )
  if (moduleVersion === 0) return level.tcbStatus
  return convergeWithModule(level, moduleStatus(info, svn))
}

function moduleStatus(info: TdxTcbInfo, svn: Buffer): string {
  const id = `TDX_${hex(svn.subarray(1, 2)).toUpperCase()}`
  const identity = info.tdxModuleIdentities.find((m) => m.id.toUpperCase() === id)
  if (!identity)
    throw new EvidenceMismatchError(
      'TDX module identity',
      id,
      `none in tcbInfo.tdxModuleIdentities (${info.tdxModuleIdentities.map((m) => m.id).join(', ') || 'empty'})`,
      'TDX TCB evaluation',
    )
  const isvSvn = svn[0] ?? 0
  const level = identity.tcbLevels.find((l) => isvSvn >= l.isvSvn)
  if (!level)
    throw new EvidenceMismatchError(
      `${id} TCB level`,
      `ISVSVN at or below ${isvSvn}`,
      'none',
      'TDX TCB evaluation',
    )
  return level.tcbStatus
}

/** An out-of-date TDX module makes the platform out of date, keeping a configuration need. */
function convergeWithModule(level: TdxTcbLevel, module: string): string {
  if (module === 'UpToDate') return level.tcbStatus
  if (module === 'OutOfDate')
    return level.tcbStatus.startsWith('Configuration') ? 'OutOfDateConfigurationNeeded' : 'OutOfDate'
  return module
}

/** The QE's identity and TCB status from Intel's QE identity. */
export function evaluateQeIdentity(id: TdQeIdentity, qe: SgxReportBody): string {
  const ctx = 'QE report vs QE identity'
  if (!id.mrSigner.equals(qe.mrSigner))
    throw new EvidenceMismatchError('QE MRSIGNER', hex(id.mrSigner), hex(qe.mrSigner), ctx)
  if (id.isvProdId !== qe.isvProdId)
    throw new EvidenceMismatchError('QE ISVPRODID', String(id.isvProdId), String(qe.isvProdId), ctx)
  const misc = (qe.miscSelect & id.miscSelectMask.readUInt32LE(0)) >>> 0
  if (misc !== id.miscSelect.readUInt32LE(0))
    throw new EvidenceMismatchError('QE MISCSELECT (masked)', hex(id.miscSelect), hex(u32le(misc)), ctx)
  const attrs = Buffer.from(qe.attributes.map((b, i) => b & (id.attributesMask[i] ?? 0)))
  if (!attrs.equals(id.attributes))
    throw new EvidenceMismatchError('QE ATTRIBUTES (masked)', hex(id.attributes), hex(attrs), ctx)
  const level = id.tcbLevels.find((l) => l.isvSvn <= qe.isvSvn)
  if (!level)
    throw new EvidenceMismatchError(
      'QE TCB level',
      `ISVSVN at or below ${qe.isvSvn}`,
      'none in enclaveIdentity.tcbLevels',
      ctx,
    )
  return level.tcbStatus
}

const u32le = (v: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(v >>> 0)
  return b
}
