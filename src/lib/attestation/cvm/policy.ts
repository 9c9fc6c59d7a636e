/**
 * What a CVM validator needs beyond measurements (the operator's pinned roots and minimums), and what
 * a CVM issuer needs to reach its hardware: both injected, so production, tests and the local
 * cluster's stand-ins differ only here.
 */
import type { SnpPolicy } from '../snp/index.js'
import type { TdxPolicy } from '../tdx/index.js'

/** An SEV-SNP policy as the config pins it; the binding (REPORT_DATA) and the clock come per call. */
export type SnpValidationPolicy = { kind: 'snp' } & Omit<SnpPolicy, 'reportData' | 'now'>

/** A TDX policy as the config pins it; the binding (REPORT_DATA) and the clock come per call. */
export type TdxValidationPolicy = { kind: 'tdx' } & Omit<TdxPolicy, 'reportData' | 'now'>

export type CvmValidationPolicy = SnpValidationPolicy | TdxValidationPolicy

/** The evidence a CVM node can produce; each variant uses the parts its cloud offers. */
export interface CvmHardware {
  /** configfs-tsm: the SNP report (and its certificate table) or TDX quote for these 64 bytes. */
  report(reportData: Buffer): Promise<{ outblob: Buffer; auxblob?: Buffer }>
  /** Azure: the HCL report the firmware keeps in the vTPM's NV index 0x01400001. */
  hclReport?(): Promise<Buffer>
  /** Azure SEV-SNP: the VCEK and its chain from the cloud's cache (THIM), PEM. */
  vcek?(): Promise<{ vcek: Buffer; chain: Buffer }>
  /** Azure TDX: the quote IMDS makes of a TD report. */
  tdQuote?(tdReport: Buffer): Promise<Buffer>
}

/** What `verify` and `status` show of a passed CVM attestation. */
export interface CvmSummary {
  kind: 'snp' | 'tdx'
  /** Whether the root that verified is the vendor's published one (false: a stand-in root). */
  vendorRoot: boolean
  rootSubject: string
  fields: Record<string, string>
}
