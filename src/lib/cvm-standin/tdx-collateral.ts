/**
 * TEST DOUBLE at the hardware boundary: Intel PCS collateral (TCB info, TD QE identity) for a
 * stand-in platform, signed by a stand-in TCB signing key. The JSON has Intel's v4 shape, and
 * the signature covers the exact member text, as Intel's does.
 */
import { sign, type KeyObject } from 'node:crypto'
import type { tdx } from '../attestation/index.js'

type TdxCollateralFiles = tdx.TdxCollateralFiles

export interface StandInPlatform {
  fmspc: string
  pceId: string
  tcbComponents: number[]
  pceSvn: number
  teeTcbSvn: Buffer
  qeSvn: number
  qeMrSigner: Buffer
}

export interface StandInCollateralOptions {
  /** Status of the level the stand-in's own TCB meets; default 'UpToDate'. */
  tcbStatus?: string
  /** Status of the TDX module identity a TDX 1.5 platform (TEE_TCB_SVN[1] > 0) is judged by; default 'UpToDate'. */
  moduleStatus?: string
  issueDate?: Date
  nextUpdate?: Date
}

const DAY_MS = 24 * 3600 * 1000

export function standInCollateral(
  platform: StandInPlatform,
  signing: { key: KeyObject; chainPem: string },
  opts: StandInCollateralOptions & { now: Date },
): TdxCollateralFiles {
  const issueDate = (opts.issueDate ?? new Date(opts.now.getTime() - DAY_MS)).toISOString()
  const nextUpdate = (opts.nextUpdate ?? new Date(opts.now.getTime() + 30 * DAY_MS)).toISOString()
  const svns = (values: readonly number[]) => values.map((svn) => ({ svn }))
  const tcbInfo = {
    id: 'TDX',
    version: 3,
    issueDate,
    nextUpdate,
    fmspc: platform.fmspc,
    pceId: platform.pceId,
    tcbType: 0,
    tcbEvaluationDataNumber: 1,
    tdxModule: {
      mrsigner: '00'.repeat(48),
      attributes: '0000000000000000',
      attributesMask: 'FFFFFFFFFFFFFFFF',
    },
    ...moduleIdentities(platform, opts.moduleStatus ?? 'UpToDate', issueDate),
    tcbLevels: [
      {
        tcb: {
          sgxtcbcomponents: svns(platform.tcbComponents),
          pcesvn: platform.pceSvn,
          tdxtcbcomponents: svns([...platform.teeTcbSvn]),
        },
        tcbDate: issueDate,
        tcbStatus: opts.tcbStatus ?? 'UpToDate',
      },
      // every older platform: what a quote below the stand-in's own TCB lands on
      {
        tcb: {
          sgxtcbcomponents: svns(Array(16).fill(0)),
          pcesvn: 0,
          tdxtcbcomponents: svns(Array(16).fill(0)),
        },
        tcbDate: '2018-01-04T00:00:00Z',
        tcbStatus: 'OutOfDate',
        advisoryIDs: ['STAND-IN-SA-00001'],
      },
    ],
  }
  const enclaveIdentity = {
    id: 'TD_QE',
    version: 2,
    issueDate,
    nextUpdate,
    tcbEvaluationDataNumber: 1,
    miscselect: '00000000',
    miscselectMask: 'FFFFFFFF',
    attributes: '11000000000000000000000000000000',
    attributesMask: 'FBFFFFFFFFFFFFFF0000000000000000',
    mrsigner: platform.qeMrSigner.toString('hex').toUpperCase(),
    isvprodid: 2,
    tcbLevels: [{ tcb: { isvsvn: platform.qeSvn }, tcbDate: issueDate, tcbStatus: 'UpToDate' }],
  }
  return {
    tcbInfo: signedBody('tcbInfo', tcbInfo, signing.key),
    tcbInfoIssuerChain: signing.chainPem,
    qeIdentity: signedBody('enclaveIdentity', enclaveIdentity, signing.key),
    qeIdentityIssuerChain: signing.chainPem,
  }
}

/** TDX 1.5 platforms report their module's major version in TEE_TCB_SVN[1] and are judged by its identity. */
function moduleIdentities(platform: StandInPlatform, status: string, tcbDate: string): object {
  const version = platform.teeTcbSvn[1] ?? 0
  if (version === 0) return {}
  const id = `TDX_${version.toString(16).padStart(2, '0').toUpperCase()}`
  const levels = [
    { tcb: { isvsvn: platform.teeTcbSvn[0] ?? 0 }, tcbDate, tcbStatus: status },
    { tcb: { isvsvn: 0 }, tcbDate: '2018-01-04T00:00:00Z', tcbStatus: 'OutOfDate' },
  ]
  const identity = {
    mrsigner: '00'.repeat(48),
    attributes: '0000000000000000',
    attributesMask: 'FFFFFFFFFFFFFFFF',
  }
  return { tdxModuleIdentities: [{ id, ...identity, tcbLevels: levels }] }
}

function signedBody(member: string, value: object, key: KeyObject): string {
  const text = JSON.stringify(value)
  const signature = sign('sha256', Buffer.from(text, 'utf8'), { key, dsaEncoding: 'ieee-p1363' }).toString(
    'hex',
  )
  return `{"${member}":${text},"signature":"${signature}"}`
}
