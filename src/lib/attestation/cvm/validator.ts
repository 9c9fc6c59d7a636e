/**
 * The validator of every confidential-VM variant: the vTPM quote as qemu-vtpm checks it (signature,
 * nonce and TLS key, PCR digest over the InstanceInfo it commits to), then the hardware evidence in
 * InstanceInfo against the operator's pinned root and policy, then the binding between the two:
 * REPORT_DATA commits to the AK that quoted, so a TPM outside the CVM cannot answer for it.
 */
import type { KeyObject } from 'node:crypto'
import type { Logger } from '../../system/index.js'
import { objectName, publicKeyOf, type TpmtPublic } from '../../tpm/index.js'
import { hclAttestationKey, hclReportData } from '../azure/index.js'
import { decodeDocument } from '../document.js'
import { AttestationError } from '../errors.js'
import type { Measurements } from '../measurements.js'
import { verifySnpEvidence } from '../snp/index.js'
import { oneLine } from '../one-line-name.js'
import { verifyTdxQuote } from '../tdx/index.js'
import type { ValidationResult, Validator, ValidatorOptions } from '../types.js'
import { VARIANT_OIDS, type CvmVariant } from '../variant.js'
import { attestationKeyOf, checkMeasurements, checkSha256Quote, parseOrRefuse } from '../vtpm-quote.js'
import { expectedReportData } from './binding.js'
import { decodeSnpInstanceInfo, decodeTdxInstanceInfo } from './instance-info.js'
import { pemBlocks } from './pem.js'
import type { CvmSummary, SnpValidationPolicy, TdxValidationPolicy } from './policy.js'

const SNP_VARIANTS: readonly CvmVariant[] = ['aws-sev-snp', 'gcp-sev-snp', 'azure-sev-snp']
export const cvmKind = (v: CvmVariant): 'snp' | 'tdx' => (SNP_VARIANTS.includes(v) ? 'snp' : 'tdx')

interface Quoted {
  akPub: Buffer
  ak: TpmtPublic
  userData: Buffer
  nonce: Buffer
  instanceInfo: Buffer
}

export function createCvmValidator(
  variant: CvmVariant,
  measurements: Measurements,
  log: Logger | undefined,
  opts: ValidatorOptions,
): Validator {
  const policy = opts.cvm
  if (policy?.kind !== cvmKind(variant))
    throw new AttestationError(
      `${variant} validation needs its ${cvmKind(variant) === 'snp' ? 'SEV-SNP' : 'TDX'} policy (pinned root and minimums) from the config; none was given`,
    )
  const now = opts.now ?? (() => new Date())
  return {
    variant,
    oid: VARIANT_OIDS[variant],
    async validate(raw, nonce, expected): Promise<ValidationResult> {
      if (expected)
        throw new AttestationError(
          `${variant} attestation cannot prove credential activation, which this verifier expects`,
        )
      const doc = decodeDocument(raw)
      if (!doc.instanceInfo)
        throw new AttestationError(
          `${variant} attestation document carries no InstanceInfo (the hardware report): the node attests with another variant`,
        )
      const ak = attestationKeyOf(doc.akPub)
      const akName = parseOrRefuse(() => objectName(doc.akPub), 'Attestation.ak_pub')
      const entry = checkSha256Quote(doc, ak, nonce)
      const quoted: Quoted = {
        akPub: doc.akPub,
        ak,
        userData: doc.userData,
        nonce,
        instanceInfo: doc.instanceInfo,
      }
      const { summary, warnings } =
        policy.kind === 'snp'
          ? checkSnp(variant, quoted, policy, now())
          : checkTdx(variant, quoted, policy, now())
      for (const w of warnings) log?.warn(w)
      const measurementWarnings = checkMeasurements(measurements, entry.pcrs, log)
      return {
        userData: doc.userData,
        pcrs: entry.pcrs,
        warnings: [...warnings, ...measurementWarnings],
        akName,
        cvm: summary,
        ...(entry.eventLog && { eventLog: entry.eventLog }),
      }
    },
  }
}

function checkSnp(
  variant: CvmVariant,
  q: Quoted,
  policy: SnpValidationPolicy,
  now: Date,
): { summary: CvmSummary; warnings: string[] } {
  const info = decodeSnpInstanceInfo(q.instanceInfo)
  let reportData: Buffer
  if (variant === 'azure-sev-snp') {
    if (!info.azureRuntimeData)
      throw new AttestationError(
        'azure-sev-snp: InstanceInfo.Azure.RuntimeData (the HCL runtime data) is missing',
      )
    reportData = hclReportData(info.azureRuntimeData)
    requireHclKey(info.azureRuntimeData, q.ak)
  } else {
    reportData = expectedReportData(variant as 'aws-sev-snp' | 'gcp-sev-snp', q.akPub, q.userData, q.nonce)
  }
  const verified = verifySnpEvidence(
    {
      report: info.attestationReport,
      signer: info.reportSigner.length > 0 ? info.reportSigner : undefined,
      chain: pemBlocks(info.certChain),
    },
    { ...policy, reportData, now: () => now },
  )
  const r = verified.report
  return {
    warnings: verified.warnings,
    summary: {
      kind: 'snp',
      vendorRoot: verified.rootIsAmds,
      rootSubject: oneLine(verified.ark.subject),
      fields: {
        product: verified.product,
        signer: verified.signer,
        reportVersion: String(r.version),
        measurement: r.measurement.toString('hex'),
        reportedTcb: tcbText(r.reportedTcb),
        policy: `0x${r.policy.toString(16)}`,
        reportData: r.reportData.toString('hex'),
      },
    },
  }
}

function checkTdx(
  variant: CvmVariant,
  q: Quoted,
  policy: TdxValidationPolicy,
  now: Date,
): { summary: CvmSummary; warnings: string[] } {
  const info = decodeTdxInstanceInfo(q.instanceInfo)
  let reportData: Buffer
  if (variant === 'azure-tdx') {
    if (!info.runtimeData)
      throw new AttestationError('azure-tdx: InstanceInfo.RuntimeData (the HCL runtime data) is missing')
    reportData = hclReportData(info.runtimeData)
    requireHclKey(info.runtimeData, q.ak)
  } else {
    reportData = expectedReportData('qemu-tdx', q.akPub, q.userData, q.nonce)
  }
  const verified = verifyTdxQuote(info.quote, { ...policy, reportData, now: () => now })
  const body = verified.quote.body
  return {
    warnings: verified.warnings,
    summary: {
      kind: 'tdx',
      vendorRoot: verified.rootIsIntels,
      rootSubject: oneLine(verified.root.subject),
      fields: {
        tcbStatus: verified.tcbStatus,
        mrTd: body.mrTd.toString('hex'),
        ...Object.fromEntries(body.rtmrs.map((v, i) => [`rtmr${i}`, v.toString('hex')])),
        mrSeam: body.mrSeam.toString('hex'),
        tdAttributes: body.tdAttributes.toString('hex'),
        xfam: body.xfam.toString('hex'),
        reportData: body.reportData.toString('hex'),
      },
    },
  }
}

/** Azure: the HCL runtime data names the AK that may quote for this CVM; it must be the one that did. */
function requireHclKey(runtimeData: Buffer, ak: TpmtPublic): void {
  const named: KeyObject = hclAttestationKey(runtimeData)
  if (!named.equals(publicKeyOf(ak)))
    throw new AttestationError(
      'HCL runtime data names another attestation key (HCLAkPub) than the one that signed the quote: the quote is from a TPM outside this CVM',
    )
}

const tcbText = (t: { bootloader: number; tee: number; snp: number; microcode: number }) =>
  `bootloader ${t.bootloader}, tee ${t.tee}, snp ${t.snp}, microcode ${t.microcode}`
