/**
 * The fields of a parsed SEV-SNP report or TDX quote as an auditor reads them: numbers as numbers,
 * flags as booleans, byte strings in hex. Parsed only: nothing here says the values are trusted.
 */
import type { SnpReport, SnpTcb } from './snp/index.js'
import type { TdxQuote } from './tdx/index.js'
import { TD_ATTRIBUTE_DEBUG } from './tdx/layout.js'

export type FieldValue = string | number | boolean | Readonly<Record<string, string | number | boolean>>
export type EvidenceFields = Record<string, FieldValue>

const hex = (b: Buffer) => b.toString('hex')
const u64 = (v: bigint) => `0x${v.toString(16).padStart(16, '0')}`

function tcb(t: SnpTcb): Record<string, string | number> {
  return { bootloader: t.bootloader, tee: t.tee, snp: t.snp, microcode: t.microcode, raw: u64(t.raw) }
}

export function snpFields(r: SnpReport): EvidenceFields {
  const p = r.policyBits
  const version = (v: { major: number; minor: number; build: number }) => `${v.major}.${v.minor}.${v.build}`
  return {
    version: r.version,
    guestSvn: r.guestSvn,
    signer: r.signerInfo.signingKey,
    policy: {
      raw: u64(r.policy),
      abi: `${p.abiMajor}.${p.abiMinor}`,
      debug: p.debug,
      migrateMa: p.migrateMa,
      smt: p.smt,
      singleSocket: p.singleSocket,
      cxlAllow: p.cxlAllow,
      memAes256Xts: p.memAes256Xts,
      raplDis: p.raplDis,
      ciphertextHiding: p.ciphertextHiding,
      pageSwapDisable: p.pageSwapDisable,
    },
    vmpl: r.vmpl,
    signatureAlgo: r.signatureAlgo,
    platformInfo: u64(r.platformInfo),
    maskChipKey: r.signerInfo.maskChipKey,
    authorKeyEn: r.signerInfo.authorKeyEn,
    reportedTcb: tcb(r.reportedTcb),
    currentTcb: tcb(r.currentTcb),
    committedTcb: tcb(r.committedTcb),
    launchTcb: tcb(r.launchTcb),
    currentFirmware: version(r.current),
    committedFirmware: version(r.committed),
    ...(r.cpuid
      ? {
          cpuid: {
            family: `0x${r.cpuid.family.toString(16)}`,
            model: `0x${r.cpuid.model.toString(16)}`,
            stepping: `0x${r.cpuid.stepping.toString(16)}`,
          },
        }
      : {}),
    measurement: hex(r.measurement),
    reportData: hex(r.reportData),
    hostData: hex(r.hostData),
    familyId: hex(r.familyId),
    imageId: hex(r.imageId),
    idKeyDigest: hex(r.idKeyDigest),
    authorKeyDigest: hex(r.authorKeyDigest),
    reportId: hex(r.reportId),
    reportIdMa: hex(r.reportIdMa),
    chipId: hex(r.chipId),
  }
}

export function tdxFields(q: TdxQuote): EvidenceFields {
  const b = q.body
  return {
    version: q.header.version,
    teeType: `0x${q.header.teeType.toString(16)}`,
    qeVendorId: hex(q.header.qeVendorId),
    mrTd: hex(b.mrTd),
    rtmr0: hex(b.rtmrs[0]),
    rtmr1: hex(b.rtmrs[1]),
    rtmr2: hex(b.rtmrs[2]),
    rtmr3: hex(b.rtmrs[3]),
    mrSeam: hex(b.mrSeam),
    mrSignerSeam: hex(b.mrSignerSeam),
    seamAttributes: hex(b.seamAttributes),
    tdAttributes: {
      raw: hex(b.tdAttributes),
      debug: ((b.tdAttributes[0] ?? 0) & TD_ATTRIBUTE_DEBUG) !== 0,
    },
    xfam: hex(b.xfam),
    mrConfigId: hex(b.mrConfigId),
    mrOwner: hex(b.mrOwner),
    mrOwnerConfig: hex(b.mrOwnerConfig),
    teeTcbSvn: hex(b.teeTcbSvn),
    reportData: hex(b.reportData),
    qeSvn: q.header.qeSvn,
    pceSvn: q.header.pceSvn,
    qeReportIsvSvn: q.qeReport.isvSvn,
  }
}
