/**
 * The one way new expected values reach the config, whatever vouches for them (a trusted node, a
 * signature): show the change, ask (or take --yes), then replace the file in one step.
 */
import {
  applyMeasurementsUpdate,
  hasChanges,
  renderMeasurementsUpdate,
  writeConfigMeasurements,
  type ConfigMeasurements,
  type MeasurementsSource,
  type MeasurementUpdate,
} from './measurements-update.js'

export interface OfferIo {
  log(text: string): void
  /** Resolves true to write; throws when it may not ask (no terminal, --json). */
  confirm(question: string): Promise<boolean>
  /** --yes: write without asking. */
  yes: boolean
}

export interface OfferOptions {
  source: MeasurementsSource
  notes?: readonly string[]
  /** Completes "<file> changed while …" when someone else edited the config meanwhile. */
  during: string
}

/** True when the config was rewritten. Every check ran before this: the edit is validated first. */
export async function offerMeasurementsUpdate(
  config: ConfigMeasurements,
  pcrs: readonly MeasurementUpdate[],
  opts: OfferOptions,
  io: OfferIo,
): Promise<boolean> {
  io.log(renderMeasurementsUpdate(opts.source, pcrs, opts.notes))
  if (!hasChanges(pcrs)) {
    io.log(`${config.file} already expects these values; nothing to write.`)
    return false
  }
  const text = applyMeasurementsUpdate(config.text, config.file, pcrs)
  if (!io.yes && !(await io.confirm(`Write these values into ${config.file}?`))) {
    io.log('Nothing was changed.')
    return false
  }
  await writeConfigMeasurements(config, text, opts.during)
  io.log(`Wrote the measurements into ${config.file}.`)
  return true
}
