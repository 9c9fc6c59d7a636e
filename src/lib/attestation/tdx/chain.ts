/**
 * A certificate chain as Intel serves it (leaf first, then intermediates, maybe its own root)
 * verified up to one of the pinned roots with node:crypto. The chain's own root is never trusted:
 * the walk ends at the first certificate a pinned root signed.
 */
import { X509Certificate } from 'node:crypto'
import { AttestationError } from '../errors.js'
import { INTEL_SGX_ROOT_CA } from '../vendor-roots.js'
import { oneLine } from '../one-line-name.js'

const INTEL_ROOT_DER = new X509Certificate(INTEL_SGX_ROOT_CA).raw

export interface VerifiedChain {
  leaf: X509Certificate
  root: X509Certificate
  rootIsIntels: boolean
}

/** `what` names the chain in messages, e.g. "PCK certificate chain". */
export function verifyToPinnedRoot(
  chain: readonly X509Certificate[],
  roots: readonly X509Certificate[],
  now: Date,
  what: string,
): VerifiedChain {
  if (roots.length === 0) throw new AttestationError(`${what}: no Intel root certificate is pinned`)
  const leaf = chain[0]
  if (!leaf) throw new AttestationError(`${what}: is empty`)
  // no certificate is used twice, so the walk ends after at most chain.length steps
  const used = new Set<X509Certificate>([leaf])
  let current = leaf
  for (;;) {
    checkValidity(current, what, now)
    const root = roots.find((r) => signedBy(current, r))
    if (root) {
      if (!root.ca)
        throw new AttestationError(`${what}: pinned root ${oneLine(root.subject)} is not a CA certificate`)
      checkValidity(root, `${what} (pinned root)`, now)
      return { leaf, root, rootIsIntels: root.raw.equals(INTEL_ROOT_DER) }
    }
    const issuer = chain.find((c) => !used.has(c) && signedBy(current, c))
    if (!issuer) break
    if (!issuer.ca)
      throw new AttestationError(
        `${what}: ${oneLine(issuer.subject)} signed ${oneLine(current.subject)} but is not a CA certificate`,
      )
    used.add(issuer)
    current = issuer
  }
  throw new AttestationError(
    `${what}: ${oneLine(current.subject)}, issued by ${oneLine(current.issuer)}, chains to none of the ${roots.length} pinned roots (${roots.map((r) => oneLine(r.subject)).join('; ')})`,
  )
}

function signedBy(child: X509Certificate, parent: X509Certificate): boolean {
  if (!child.checkIssued(parent)) return false
  try {
    return child.verify(parent.publicKey)
  } catch {
    return false
  }
}

function checkValidity(cert: X509Certificate, what: string, now: Date): void {
  const from = new Date(cert.validFrom)
  const to = new Date(cert.validTo)
  const name = oneLine(cert.subject)
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()))
    throw new AttestationError(`${what}: ${name} has unreadable validity dates`)
  if (!(now >= from)) throw new AttestationError(`${what}: ${name} is not valid before ${from.toISOString()}`)
  if (!(now <= to)) throw new AttestationError(`${what}: ${name} expired on ${to.toISOString()}`)
}

/** Node gives no subject (undefined, though typed string) for a certificate whose name is empty. */
