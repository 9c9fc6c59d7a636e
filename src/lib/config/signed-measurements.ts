/**
 * Turning signed reference measurements into config updates: the signed values replace the
 * expected values of the PCRs they name and add the PCRs the config lacks; the operator's warnOnly
 * choices and PCRs the signer does not name stay as they are. PCR 15 stays zero, as always.
 */
import { CLUSTER_ID_PCR } from '../attestation/index.js'
import { CliError } from '../errors/index.js'
import type { MeasurementsEntry } from '../measurements/index.js'
import type { MeasurementsSource, MeasurementUpdate } from './measurements-update.js'
import type { MeasurementsConfig } from './types.js'

/** The config's measurements are TPM PCRs (SHA-256); 48-byte values are TDX registers. */
const PCR_HEX_DIGITS = 64

export function planSignedMeasurementsUpdate(
  current: MeasurementsConfig,
  signed: MeasurementsEntry,
  source: string,
): MeasurementUpdate[] {
  return [...signed.measurements].map(([index, value]) => {
    if (value.expected.length !== PCR_HEX_DIGITS)
      throw new CliError(
        `${source}: measurement ${index} is ${value.expected.length / 2} bytes; this workspace's measurements are 32-byte TPM PCRs`,
        {
          hint: "Constellation's TDX lists carry MRTD and RTMRs (48 bytes): set those in the section's mrTd and rtmrs instead",
        },
      )
    const entry = current[String(index)]
    const next = index === CLUSTER_ID_PCR ? '00'.repeat(PCR_HEX_DIGITS / 2) : value.expected
    return entry
      ? { index, current: entry.expected.toLowerCase(), node: value.expected, next, warnOnly: entry.warnOnly }
      : { index, current: null, node: value.expected, next, warnOnly: value.warnOnly }
  })
}

export const signedSource = (url: string, image: string, variant: string): MeasurementsSource => ({
  heading: `Signed measurements of image ${image} for ${variant} (${url}, signature verified) beside the config's expected values`,
  column: 'SIGNED',
})

/** What the table does not show: kept warnOnly choices, PCRs the signer left out, PCR 15. */
export function signedMeasurementNotes(
  current: MeasurementsConfig,
  signed: MeasurementsEntry,
  updates: readonly MeasurementUpdate[],
): string[] {
  const notes: string[] = []
  const differ = updates.filter(
    (u) => u.current !== null && signed.measurements.get(u.index)?.warnOnly !== u.warnOnly,
  )
  if (differ.length > 0)
    notes.push(
      `warnOnly stays as the config has it for PCR ${differ.map((u) => u.index).join(', ')} (the signed file says otherwise).`,
    )
  const unsigned = Object.keys(current)
    .map(Number)
    .filter((i) => !signed.measurements.has(i))
  if (unsigned.length > 0)
    notes.push(`PCR ${unsigned.join(', ')}: not in the signed measurements; the config's values stay.`)
  const pcr15 = updates.find((u) => u.index === CLUSTER_ID_PCR)
  if (pcr15 && !/^0+$/.test(pcr15.node))
    notes.push(
      `The signed PCR ${CLUSTER_ID_PCR} is not zero; it stays zero: init and join require a node never bootstrapped.`,
    )
  return notes
}
