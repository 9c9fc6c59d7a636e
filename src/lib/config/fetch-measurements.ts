/**
 * `config fetch-measurements` up to the offer: the workspace's config, the key it trusts (the
 * flag's, else the one it pins), and the signed values for its variant, planned as config updates.
 */
import { createHash, type KeyObject } from 'node:crypto'
import path from 'node:path'
import { UsageError } from '../errors/index.js'
import { fetchSignedMeasurements, parseFetchUrl } from '../measurements/index.js'
import type { DownloadLimits, HttpGet } from '../system/index.js'
import { readMeasurementsKey, MEASUREMENTS_KEY_FIELD } from './measurements-key.js'
import {
  readConfigMeasurements,
  type ConfigMeasurements,
  type MeasurementUpdate,
} from './measurements-update.js'
import { planSignedMeasurementsUpdate, signedMeasurementNotes } from './signed-measurements.js'

export interface FetchRequest {
  configFile: string
  url: string
  /** Default: the measurements URL with `.sig` appended, as Constellation publishes them. */
  signatureUrl?: string
  /** A PEM file that replaces the config's pinned key for this run. */
  publicKeyFile?: string
  cwd: string
  limits?: Partial<DownloadLimits>
}

export interface FetchPlan {
  config: ConfigMeasurements
  url: string
  signatureUrl: string
  image: string
  variant: string
  /** Which key verified the signature, and its SHA-256 over the DER public key. */
  publicKey: { source: string; sha256: string }
  /** SHA-256 of the verified measurements file. */
  sha256: string
  pcrs: MeasurementUpdate[]
  notes: string[]
}

export async function planFetchedMeasurements(req: FetchRequest, get: HttpGet): Promise<FetchPlan> {
  const url = parseFetchUrl(req.url, '--url').href
  const signatureUrl = parseFetchUrl(req.signatureUrl ?? `${url}.sig`, '--signature-url').href
  const config = await readConfigMeasurements(req.configFile)
  const { key, source } = trustedKey(req, config)
  const variant = config.attestation.variant
  const fetched = await fetchSignedMeasurements(
    { measurementsUrl: url, signatureUrl, publicKey: key, variant, limits: req.limits },
    get,
  )
  const pcrs = planSignedMeasurementsUpdate(config.measurements, fetched.entry, url)
  return {
    config,
    url,
    signatureUrl,
    image: fetched.image,
    variant,
    publicKey: { source, sha256: fingerprint(key) },
    sha256: createHash('sha256').update(fetched.bytes).digest('hex'),
    pcrs,
    notes: signedMeasurementNotes(config.measurements, fetched.entry, pcrs),
  }
}

function trustedKey(req: FetchRequest, config: ConfigMeasurements): { key: KeyObject; source: string } {
  if (req.publicKeyFile !== undefined) {
    const file = path.resolve(req.cwd, req.publicKeyFile)
    return { key: readMeasurementsKey(file, req.cwd, '--public-key'), source: file }
  }
  const pinned = config.measurementsPublicKey
  if (pinned === undefined)
    throw new UsageError(
      `${config.file} pins no ${MEASUREMENTS_KEY_FIELD}, and no --public-key was given`,
      `add the image builder's public key to the config (${MEASUREMENTS_KEY_FIELD}: PEM text or a file), or pass --public-key; it is never taken from the server`,
    )
  const source = `${MEASUREMENTS_KEY_FIELD} in ${config.file}`
  return { key: readMeasurementsKey(pinned, path.dirname(config.file), source), source }
}

const fingerprint = (key: KeyObject) =>
  createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex')
