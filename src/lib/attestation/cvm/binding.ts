/**
 * What ties a CVM's hardware report to the vTPM quote beside it: the report's REPORT_DATA commits to
 * the attestation key that signed the quote, so a quote from a TPM outside the CVM cannot be passed
 * off with a genuine report. AWS's is Constellation's (SHA-512 of the AK's public area); GCP and
 * QEMU-TDX add the TLS key and nonce the quote is bound to, so the report is fresh as well; Azure's
 * report commits to the HCL runtime data, which names the AK (azure/hcl-report.ts).
 */
import { createHash } from 'node:crypto'
import type { CvmVariant } from '../variant.js'

export const REPORT_DATA_BYTES = 64

const sha = (alg: 'sha256' | 'sha512', ...parts: Buffer[]) =>
  parts.reduce((h, p) => h.update(p), createHash(alg)).digest()

export type DirectlyBoundVariant = Exclude<CvmVariant, 'azure-sev-snp' | 'azure-tdx'>

/** The REPORT_DATA a node asks its hardware for, and a validator expects, for (AK, userData, nonce). */
export function expectedReportData(
  variant: DirectlyBoundVariant,
  akPub: Buffer,
  userData: Buffer,
  nonce: Buffer,
): Buffer {
  switch (variant) {
    case 'aws-sev-snp':
      return sha('sha512', akPub)
    case 'gcp-sev-snp':
    case 'qemu-tdx':
      return sha('sha512', akPub, sha('sha256', userData, nonce))
  }
}
