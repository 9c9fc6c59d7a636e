/**
 * `measurements sign`: the image builder's side. The file is checked as Constellation's
 * measurements JSON first (a signature vouches for what it covers, so it must cover something
 * well-formed), then signed; the signature goes to a new file, never over an existing one.
 */
import { createHash } from 'node:crypto'
import { CliError } from '../errors/index.js'
import { exists, readRegularFile, readSecretFile, writeFileExclusive } from '../system/index.js'
import { parseMeasurementsDocument } from './document.js'
import { MEASUREMENTS_DOWNLOAD_LIMITS } from './fetch.js'
import { loadSigningKey, signBlob } from './signature.js'

export interface SignOptions {
  file: string
  keyFile: string
  /** Where the signature goes; undefined: `<file>.sig`; '-': nowhere (the caller prints it). */
  output?: string
}

export interface SignResult {
  file: string
  sha256: string
  image: string
  variants: string[]
  /** The signature file, or '-' for standard output. */
  output: string
  signature: string
}

/** A signature is public: readable by all, unlike the key. */
const SIGNATURE_MODE = 0o644

export async function signMeasurementsFile(opts: SignOptions): Promise<SignResult> {
  const output = opts.output ?? `${opts.file}.sig`
  if (output !== '-' && (await exists(output)))
    throw new CliError(`${output} already exists`, {
      hint: 'move it away or choose another --output; nothing was written',
    })
  const bytes = await readRegularFile(opts.file, {
    maxBytes: MEASUREMENTS_DOWNLOAD_LIMITS.maxBytes,
    what: 'measurements file',
  })
  const doc = parseMeasurementsDocument(bytes, opts.file)
  const pem = await readSecretFile(opts.keyFile, {
    what: 'a private key',
    notRegularHint: 'pass the key file itself, not a link to it',
    modeHint: `chmod 600 ${opts.keyFile}: a signing key must be readable by its owner only`,
  })
  if (pem === undefined) throw new CliError(`the key ${opts.keyFile} does not exist`)
  const signature = signBlob(bytes, loadSigningKey(pem.toString('utf8'), opts.keyFile))
  if (output !== '-') await writeFileExclusive(output, signature, SIGNATURE_MODE)
  return {
    file: opts.file,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    image: doc.image,
    variants: doc.entries.map((e) => e.attestationVariant),
    output,
    signature,
  }
}
