/** Text rendering of a verify report (the command prints it; --json prints the report itself). */
import { describeAssurance, describeHardware, type CvmSummary } from '../attestation/index.js'
import { renderTable } from '../ui/index.js'
import type { EventLogReport, VerifyReport } from './operator.js'

export function renderVerifyReport(r: VerifyReport): string {
  const rows = r.pcrs
    .filter((p) => p.status !== 'not checked' || p.value !== '')
    .map((p) => [
      String(p.index),
      p.value,
      p.expected === undefined ? '-' : p.enforced ? 'enforced' : 'warn only',
      p.status,
    ])
  const anchored = r.activation?.activated
    ? ', its EK certificate chains to the configured roots, and its TPM activated a credential for the AK that quoted'
    : ''
  const verdict = r.trusted
    ? `Node ${r.endpoint} (${r.variant}) is trusted: every enforced measurement matches${anchored}.`
    : `Node ${r.endpoint} (${r.variant}) is NOT trusted.`
  return [
    renderTable(['PCR', 'VALUE', 'EXPECTATION', 'STATUS'], rows),
    '',
    ...r.warnings.map((w) => `Warning: ${w}`),
    ...(r.hardware ? renderHardware(r.hardware) : []),
    ...(r.eventLog ? [renderEventLog(r.eventLog)] : []),
    verdict,
    // what "trusted" is worth: said beside every verdict that trusts
    ...(r.trusted ? [describeAssurance(r.attestation)] : []),
  ].join('\n')
}

function renderHardware(h: CvmSummary): string[] {
  return [describeHardware(h), ...Object.entries(h.fields).map(([k, v]) => `  ${k}: ${v}`), '']
}

/** A short summary; `--json` lists every event. */
function renderEventLog(log: EventLogReport): string {
  if (!log.replayed) return `Event log: ${log.reason}.`
  const counts = log.pcrs.map((p) => `PCR ${p.index}: ${p.events.length}`).join(', ')
  const replayed = log.pcrs.filter((p) => p.replayed).map((p) => p.index)
  return `Event log (${log.bank}): replayed ok for PCRs ${replayed.join(', ') || 'none'}; events per PCR: ${counts} (--json lists them).`
}
