/**
 * The confidential-VM evidence a vTPM document carries in InstanceInfo, as Constellation's Go code
 * writes it (JSON, []byte as standard base64). The TPM quote's qualifying data commits to these
 * bytes, so nothing in them can be swapped without breaking the quote.
 */
import { jsonFields } from '../json-fields.js'

/** SEV-SNP (Constellation's snp.InstanceInfo): the report, its signer and the chain above it, PEM. */
export interface SnpInstanceInfo {
  attestationReport: Buffer
  /** The VCEK or VLEK, PEM; empty when the verifier must find it (Azure: from the cloud's cache). */
  reportSigner: Buffer
  /** ASK/ASVK (and ARK, which a validator ignores), PEM. */
  certChain: Buffer
  /** Azure: the HCL runtime data whose SHA-256 the report's REPORT_DATA holds. */
  azureRuntimeData?: Buffer
}

/** TDX (Constellation's azure/tdx InstanceInfo): the quote, and on Azure the HCL runtime data. */
export interface TdxInstanceInfo {
  quote: Buffer
  runtimeData?: Buffer
}

const MAX_INSTANCE_INFO_BYTES = 64 * 1024
const { parse, object, bytes } = jsonFields('instance info')
const b64 = (b: Buffer) => b.toString('base64')
const present = (v: unknown) => v !== undefined && v !== null

export function encodeSnpInstanceInfo(info: SnpInstanceInfo): Buffer {
  return Buffer.from(
    JSON.stringify({
      ReportSigner: b64(info.reportSigner),
      CertChain: b64(info.certChain),
      AttestationReport: b64(info.attestationReport),
      Azure: info.azureRuntimeData ? { RuntimeData: b64(info.azureRuntimeData), MAAToken: '' } : null,
      GCP: null,
    }),
  )
}

export function decodeSnpInstanceInfo(raw: Buffer): SnpInstanceInfo {
  const top = object(parse(raw, MAX_INSTANCE_INFO_BYTES), 'InstanceInfo')
  const azure = present(top.Azure) ? object(top.Azure, 'InstanceInfo.Azure') : undefined
  return {
    attestationReport: bytes(top.AttestationReport, 'InstanceInfo.AttestationReport', { min: 1 }),
    reportSigner: present(top.ReportSigner)
      ? bytes(top.ReportSigner, 'InstanceInfo.ReportSigner')
      : Buffer.alloc(0),
    certChain: present(top.CertChain) ? bytes(top.CertChain, 'InstanceInfo.CertChain') : Buffer.alloc(0),
    azureRuntimeData: azure
      ? bytes(azure.RuntimeData, 'InstanceInfo.Azure.RuntimeData', { min: 1 })
      : undefined,
  }
}

export function encodeTdxInstanceInfo(info: TdxInstanceInfo): Buffer {
  return Buffer.from(
    JSON.stringify({
      AttestationReport: b64(info.quote),
      RuntimeData: info.runtimeData ? b64(info.runtimeData) : null,
    }),
  )
}

export function decodeTdxInstanceInfo(raw: Buffer): TdxInstanceInfo {
  const top = object(parse(raw, MAX_INSTANCE_INFO_BYTES), 'InstanceInfo')
  return {
    quote: bytes(top.AttestationReport, 'InstanceInfo.AttestationReport', { min: 1 }),
    runtimeData: present(top.RuntimeData)
      ? bytes(top.RuntimeData, 'InstanceInfo.RuntimeData', { min: 1 })
      : undefined,
  }
}
