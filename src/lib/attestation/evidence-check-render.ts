/** Text rendering of an evidence check (the command prints it; --json prints the check itself). */
import type { EvidenceCheck } from './evidence-check.js'
import type { FieldValue } from './evidence-fields.js'
import { describeHardware } from './variant.js'

const TITLE = { snp: 'AMD SEV-SNP attestation report', tdx: 'Intel TDX quote (v4)' } as const
const WHAT = { snp: 'SEV-SNP report', tdx: 'TDX quote' } as const

export function renderEvidenceCheck(c: EvidenceCheck): string {
  return [
    `${c.file}: ${TITLE[c.kind]}`,
    ...Object.entries(c.fields).flatMap(([k, v]) => renderField(k, v)),
    '',
    ...c.warnings.map((w) => `Warning: ${w}`),
    verdict(c),
    rootLine(c),
  ].join('\n')
}

function renderField(name: string, value: FieldValue): string[] {
  if (typeof value !== 'object') return [`  ${name}: ${String(value)}`]
  return [`  ${name}:`, ...Object.entries(value).map(([k, v]) => `    ${k}: ${String(v)}`)]
}

function verdict(c: EvidenceCheck): string {
  if (!c.trusted) return `Verdict: NOT trusted: ${c.refusal?.message ?? 'refused'}`
  const signed =
    c.kind === 'snp'
      ? `its signature verifies under the ${String(c.fields.signer)}, whose chain ends in a pinned root`
      : 'its signatures (attestation key, QE report, PCK chain) verify up to a pinned root'
  const data = c.reportDataChecked ? 'REPORT_DATA matches --report-data' : 'REPORT_DATA not checked'
  const tcb =
    c.kind === 'tdx' && c.fields.tcbStatus === 'not evaluated'
      ? 'TCB status not evaluated (no --collateral)'
      : 'TCB reported, not judged'
  const measured = c.kind === 'snp' ? 'launch measurement' : 'MRTD and RTMRs'
  return `Verdict: TRUSTED: ${signed}; debug is off; ${data}; ${measured} shown, not checked; ${tcb}.`
}

function rootLine(c: EvidenceCheck): string {
  if (c.root)
    return describeHardware({ kind: c.kind, vendorRoot: c.root.vendor, rootSubject: c.root.subject })
  const vendor = c.pinnedRoots.every((r) => r.vendor)
  const pinned = c.pinnedRoots.map((r) => r.subject).join('; ')
  return `Root: none established for the ${WHAT[c.kind]}; pinned ${vendor ? "the vendor's published roots" : 'roots given with --root, NOT the vendor’s'}: ${pinned}`
}
