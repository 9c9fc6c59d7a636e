/**
 * `join-config update`: the measurements of constellation-conf.yaml, as the cluster's join services
 * must enforce them (PCR 15 always zero), against the join-config the cluster enforces now.
 */
import {
  JoinConfigError,
  measurementsForJoins,
  measurementsFromConfig,
  parseJoinConfig,
  type Measurements,
} from '../attestation/index.js'
import { CliError } from '../errors/index.js'
import { renderTable } from '../ui/index.js'
import { configuredAttestation } from './attestation.js'
import { loadConfig } from './load.js'

/**
 * Each request of `join-config update` (a ConfigMap of a few hundred bytes) may take this long. A
 * cluster that accepts and never answers is then reported as unreachable when upgrade reports it:
 * helm gives up on a TLS handshake after 10 s.
 */
export const JOIN_CONFIG_REQUEST_TIMEOUT_MS = 10_000

export interface JoinConfigChange {
  pcr: number
  /** Hex the cluster enforces now; undefined when it names no such PCR (or has no join-config). */
  current?: string
  /** Hex it will enforce; undefined when the config drops the PCR. */
  next?: string
  warnOnly: boolean
}

/** The measurements joining nodes must meet, from the workspace's config. */
export async function joinMeasurementsFromConfig(configFile: string): Promise<Measurements> {
  const { key, measurements } = configuredAttestation(await loadConfig(configFile))
  if (Object.keys(measurements).length === 0)
    throw new CliError(`${configFile}: attestation.${key}.measurements is empty`, {
      hint: 'an empty set would trust any node; fill it (constellation config measurements) first',
    })
  return measurementsForJoins(measurementsFromConfig(measurements))
}

/** The cluster's set from its ConfigMap text; undefined when it has none or it is malformed. */
export function clusterJoinMeasurements(text: string | undefined): Measurements | undefined {
  if (text === undefined) return undefined
  try {
    return parseJoinConfig(text)
  } catch (err) {
    if (err instanceof JoinConfigError) return undefined
    throw err
  }
}

export function planJoinConfigUpdate(
  current: Measurements | undefined,
  next: Measurements,
): JoinConfigChange[] {
  const pcrs = [...new Set([...(current?.keys() ?? []), ...next.keys()])].sort((a, b) => a - b)
  return pcrs.map((pcr) => {
    const now = current?.get(pcr)
    const then = next.get(pcr)
    return {
      pcr,
      current: now?.expected.toString('hex'),
      next: then?.expected.toString('hex'),
      warnOnly: then?.warnOnly ?? now?.warnOnly ?? false,
    }
  })
}

export const joinConfigChanged = (changes: readonly JoinConfigChange[]): JoinConfigChange[] =>
  changes.filter((c) => c.current !== c.next)

export function renderJoinConfigUpdate(changes: readonly JoinConfigChange[], hadClusterSet: boolean): string {
  const short = (hex?: string) => (hex === undefined ? '-' : /^0+$/.test(hex) ? '0…0 (zero)' : hex)
  const rows = changes.map((c) => [
    `PCR ${c.pcr}`,
    short(c.current),
    short(c.next),
    c.warnOnly ? 'warn only' : 'enforced',
    c.current === c.next ? 'unchanged' : 'update',
  ])
  return [
    hadClusterSet
      ? "The cluster's join-config beside the config's measurements:"
      : "The cluster has no readable join-config; it will enforce the config's measurements:",
    renderTable(['PCR', 'CLUSTER', 'CONFIG', 'EXPECTATION', 'CHANGE'], rows),
  ].join('\n')
}
