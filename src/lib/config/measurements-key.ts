/**
 * The public key a workspace pins for signed measurements (`measurementsPublicKey`): whoever builds
 * the node images signs their measurements with its private half, and `config fetch-measurements`
 * believes only what this key verifies. Constellation compiles its own key into its CLI; here each
 * operator pins the image builder's key in the config, beside the rest of what they trust.
 */
import type { KeyObject } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { CliError, messageOf } from '../errors/index.js'
import { loadVerifyingKey } from '../measurements/index.js'
import type { Problem } from '../yaml/index.js'

export const MEASUREMENTS_KEY_FIELD = 'measurementsPublicKey'
/** A PEM public key is a few hundred bytes; a larger file is not one. */
const MAX_KEY_FILE_BYTES = 16 * 1024

/** The key from PEM text, or from a file (relative paths from `baseDir`); `source` names it. */
export function readMeasurementsKey(entry: string, baseDir: string, source: string): KeyObject {
  if (entry.includes('-----BEGIN')) return loadVerifyingKey(entry, source)
  const file = path.resolve(baseDir, entry)
  let pem: string
  try {
    const size = statSync(file).size
    if (size > MAX_KEY_FILE_BYTES) throw new Error(`${size} bytes is too large for a public key`)
    pem = readFileSync(file, 'utf8')
  } catch (err) {
    throw new CliError(`${source}: reading ${file}: ${messageOf(err)}`)
  }
  return loadVerifyingKey(pem, `${source} (${file})`)
}

/** `config validate`'s view: the field names a P-256 public key, or a problem at the field. */
export function measurementsKeyProblems(value: unknown, baseDir: string): Problem[] {
  if (typeof value !== 'string' || value.length === 0) return [] // the schema says so
  try {
    readMeasurementsKey(value, baseDir, MEASUREMENTS_KEY_FIELD)
    return []
  } catch (err) {
    return [{ path: [MEASUREMENTS_KEY_FIELD], message: messageOf(err) }]
  }
}
