/**
 * The SEV-SNP certificate chain: the VCEK or VLEK, the ASK or ASVK that issued it (from the
 * evidence), and the ARK that issued that (only from the policy's pins, never from the evidence).
 */
import { X509Certificate } from 'node:crypto'
import { AttestationError, EvidenceMismatchError } from '../errors.js'
import type { SnpPolicy } from './verify.js'
import { oneLine } from '../one-line-name.js'

/** The signer certificate the report's SIGNING_KEY names; its absence is refused, naming which. */
export function signerCertificate(der: Buffer | undefined, kind: 'VCEK' | 'VLEK'): X509Certificate {
  if (!der || der.length === 0)
    throw new AttestationError(
      `the evidence carries no ${kind}: the report's SIGNING_KEY names the ${kind}, so its certificate must come with the report`,
    )
  return certificate(der, kind)
}

function certificate(der: Buffer, role: string): X509Certificate {
  try {
    return new X509Certificate(der)
  } catch (cause) {
    throw new AttestationError(`${role} certificate is not an X.509 certificate (DER or PEM)`, { cause })
  }
}

/** A chain that does not end in a pinned ARK, or is not valid now, is refused. */
export function chainToPinnedArk(
  signer: X509Certificate,
  kind: 'VCEK' | 'VLEK',
  chain: readonly Buffer[],
  policy: Pick<SnpPolicy, 'arks' | 'signingKeyPins'>,
  now: Date,
): { ask: X509Certificate; ark: X509Certificate } {
  const askRole = kind === 'VCEK' ? 'ASK' : 'ASVK'
  // parsed one by one until the issuer turns up: the ARK copy that usually follows is never needed
  const offered: X509Certificate[] = []
  let ask: X509Certificate | undefined
  for (const [i, c] of chain.entries()) {
    const cert = certificate(c, `chain[${i}]`)
    offered.push(cert)
    if (signer.checkIssued(cert) && signer.verify(cert.publicKey)) {
      ask = cert
      break
    }
  }
  if (!ask)
    throw new AttestationError(
      `no ${askRole} in the evidence issued the ${kind} (issuer ${oneLine(signer.issuer)}): offered ${offered.map((c) => oneLine(c.subject)).join('; ') || 'none'}`,
    )
  if (policy.signingKeyPins && !policy.signingKeyPins.some((pin) => pin.raw.equals(ask.raw)))
    throw new EvidenceMismatchError(
      askRole,
      `one of ${policy.signingKeyPins.length} pinned signing keys`,
      `${oneLine(ask.subject)} (SHA-256 ${ask.fingerprint256})`,
      'SEV-SNP chain',
    )
  const ark = policy.arks.find((a) => ask.checkIssued(a) && ask.verify(a.publicKey))
  if (!ark)
    throw new EvidenceMismatchError(
      `${askRole} issuer`,
      `one of the pinned ARKs (${policy.arks.map((a) => oneLine(a.subject)).join('; ') || 'none pinned'})`,
      `${oneLine(ask.issuer)}, which no pinned ARK verifies`,
      'SEV-SNP chain',
    )
  if (!SELF_SIGNED.has(ark) && (!ark.checkIssued(ark) || !ark.verify(ark.publicKey)))
    throw new AttestationError(`SEV-SNP chain: the pinned ARK ${oneLine(ark.subject)} is not self-signed`)
  for (const [role, cert] of [
    [kind, signer],
    [askRole, ask],
    ['ARK', ark],
  ] as const) {
    const from = new Date(cert.validFrom)
    const to = new Date(cert.validTo)
    if (now < from || now > to)
      throw new EvidenceMismatchError(
        `${role} validity`,
        `${from.toISOString()} to ${to.toISOString()}`,
        `now ${now.toISOString()}`,
        'SEV-SNP chain',
      )
  }
  SELF_SIGNED.add(ark)
  return { ask, ark }
}

/** Pinned ARKs (long-lived objects from the config) whose self-signature already verified. */
const SELF_SIGNED = new WeakSet<X509Certificate>()

/** Node gives no subject (undefined, though typed string) for an empty name. */
