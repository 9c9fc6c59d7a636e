/**
 * An EK certificate chain checked against the operator's manufacturer roots with node:crypto:
 * issuer names and key identifiers (checkIssued), signatures, CA flags and validity dates.
 * Every refusal names the link that failed, by its place in EndorsementKeyCertificates.
 */
import { X509Certificate } from 'node:crypto'
import { CliError } from '../errors/index.js'
import { ekPublicKeyFromCertificate, TpmParseError, type EkPublicKey } from '../tpm/index.js'
import { AttestationError } from './errors.js'
import type { JsonFields } from './json-fields.js'
import { oneLine } from './one-line-name.js'

const FIELD = 'EndorsementKeyCertificates'

/** The DER certificates as X.509, each exactly one DER certificate (no trailing bytes, no PEM). */
export function parseEkCertificates(ders: readonly Buffer[], fields: JsonFields): X509Certificate[] {
  return ders.map((der, i) => {
    const path = `${FIELD}[${i}]`
    if (der[0] !== 0x30) throw fields.malformed(path, 'is not a DER X.509 certificate')
    let cert: X509Certificate
    try {
      cert = new X509Certificate(der)
    } catch (err: unknown) {
      throw fields.malformed(
        path,
        `is not a DER X.509 certificate (${err instanceof Error ? err.message : String(err)})`,
      )
    }
    if (!cert.raw.equals(der)) throw fields.malformed(path, 'is not exactly one DER X.509 certificate')
    return cert
  })
}

/** The roots a validator may use: CA certificates, at least one (none would trust no TPM at all). */
export function checkManufacturerRoots(roots: readonly X509Certificate[]): void {
  if (roots.length === 0)
    throw new CliError('tpm-ek attestation needs manufacturer root certificates; none are configured', {
      hint: "list the TPM manufacturers' root CA certificates in attestation.tpmEK.roots",
    })
  for (const root of roots)
    if (!root.ca)
      throw new CliError(
        `manufacturer root ${describe(root)} is not a CA certificate (basicConstraints CA:TRUE)`,
      )
}

/**
 * The EK's public key, once certs[0] chains to one of `roots` through the other certificates (in
 * any order). Every certificate on the path, the root included, must be valid at `now`.
 */
export function verifiedEkPublicKey(
  certs: readonly X509Certificate[],
  roots: readonly X509Certificate[],
  now: Date,
  fields: JsonFields,
): EkPublicKey {
  const ek = certs[0]
  if (!ek) throw fields.malformed(FIELD, 'is empty')
  verifyChain(certs, roots, now)
  try {
    return ekPublicKeyFromCertificate(ek)
  } catch (err: unknown) {
    if (err instanceof TpmParseError)
      throw fields.malformed(`${FIELD}[0]`, `holds no EK key (${err.message})`)
    throw err
  }
}

function verifyChain(certs: readonly X509Certificate[], roots: readonly X509Certificate[], now: Date): void {
  const used = new Set<number>([0])
  for (let current = 0; ;) {
    const cert = certs[current] as X509Certificate
    checkValidity(cert, label(current, cert), now)
    const rootProblems: string[] = []
    for (const root of roots) {
      const problem = issueProblem(cert, root)
      if (problem === undefined) return checkValidity(root, `manufacturer root ${describe(root)}`, now)
      rootProblems.push(`root ${describe(root)}: ${problem}`)
    }
    const intermediateProblems: string[] = []
    let next: number | undefined
    for (const [i, candidate] of certs.entries()) {
      if (used.has(i)) continue
      const problem = issueProblem(cert, candidate)
      if (problem === undefined) {
        next = i
        break
      }
      intermediateProblems.push(`${label(i, candidate)}: ${problem}`)
    }
    if (next === undefined)
      throw chainError(
        `${label(current, cert)}, issued by ${oneLine(cert.issuer)}, chains to none of the ${roots.length} configured manufacturer roots (${[...rootProblems, ...intermediateProblems].join('; ')})`,
      )
    const issuer = certs[next] as X509Certificate
    if (!issuer.ca)
      throw chainError(`${label(next, issuer)} signed ${label(current, cert)} but is not a CA certificate`)
    used.add(next)
    current = next
  }
}

/** Why `parent` did not issue `child`, or undefined when it did. */
function issueProblem(child: X509Certificate, parent: X509Certificate): string | undefined {
  if (!child.checkIssued(parent)) return 'is not its issuer (subject or key identifier differs)'
  let valid: boolean
  try {
    valid = child.verify(parent.publicKey)
  } catch {
    valid = false
  }
  return valid
    ? undefined
    : "names it as issuer, but the signature does not verify with its key (another CA's key)"
}

function checkValidity(cert: X509Certificate, what: string, now: Date): void {
  const from = new Date(cert.validFrom)
  const to = new Date(cert.validTo)
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()))
    throw chainError(`${what} has unreadable validity dates`)
  if (now < from) throw chainError(`${what} is not valid before ${from.toISOString()}`)
  if (now > to) throw chainError(`${what} expired on ${to.toISOString()}`)
}

const chainError = (why: string) => new AttestationError(`EK certificate chain: ${why}`)
/** Node gives no subject (undefined, though typed string) for an empty name, as EK certificates have. */
const describe = (cert: X509Certificate) => oneLine(cert.subject)
const label = (i: number, cert: X509Certificate) => `${FIELD}[${i}] (${describe(cert)})`
