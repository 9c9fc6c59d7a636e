/**
 * What a joining node may have signed into its kubelet certificate: exactly its own node identity
 * and the address it connected from. Pure, over fields a CSR parser already extracted (parsing the
 * DER belongs to the x509 module); a node must not get a certificate for another name, another
 * address, or another group.
 */
import { ipBytes, isLoopback, sameIp } from './ip-address.js'

export const NODES_GROUP = 'system:nodes'
export const NODE_NAME_PREFIX = 'system:node:'
export const MIN_RSA_MODULUS_BITS = 2048
/** node:crypto's name for NIST P-256 (asymmetricKeyDetails.namedCurve). */
export const P256_CURVE = 'prime256v1'

/** The request's public key, in node:crypto's terms (KeyObject.asymmetricKeyType / asymmetricKeyDetails). */
export type CsrKey =
  | { type: 'ec'; namedCurve: string }
  | { type: 'rsa'; modulusLength: number }
  | { type: 'other'; algorithm: string }

export interface CsrFields {
  /** Every O attribute of the subject, in order. */
  organizations: readonly string[]
  /** Every CN attribute of the subject. */
  commonNames: readonly string[]
  key: CsrKey
  /** The DER SubjectPublicKeyInfo the certificate will carry. */
  publicKeyDer: Buffer
  dnsNames: readonly string[]
  /** IP SANs as text (a parser renders the 4 or 16 SAN bytes). */
  ipAddresses: readonly string[]
  /** The request's signature verifies with its own key: the node holds the private key. */
  signatureValid: boolean
}

/** Turns a DER PKCS#10 request into fields; throws on anything it cannot parse. */
export type CsrParser = (der: Buffer) => CsrFields

export interface CsrProblem {
  /** The part of the request at fault: "subject O", "subject CN", "key", "IP SAN", "DNS SAN", "signature". */
  field: string
  reason: string
  /** `forbidden`: asks for more than the node may have; `invalid`: not a kubelet request at all. */
  kind: 'invalid' | 'forbidden'
}

export interface CsrContext {
  /** The address the request came from (any textual form; compared by value). */
  peerAddress: string
  /** The node's name where the cluster knows it from elsewhere (metadata); undefined: not known. */
  expectedNodeName?: string
}

// Kubernetes node names are RFC 1123 subdomains: lower-case labels of at most 63, 253 in all.
const RFC1123_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/
export const isRfc1123Name = (name: string): boolean =>
  name.length > 0 && name.length <= 253 && name.split('.').every((l) => RFC1123_LABEL.test(l))

/** The node name the request claims (its CN after `system:node:`), if it claims exactly one. */
export function claimedNodeName(csr: Pick<CsrFields, 'commonNames'>): string | undefined {
  const [cn, ...more] = csr.commonNames
  return cn?.startsWith(NODE_NAME_PREFIX) && more.length === 0 ? cn.slice(NODE_NAME_PREFIX.length) : undefined
}

/** Every reason to refuse the request; empty when it may be signed. */
export function csrProblems(csr: CsrFields, ctx: CsrContext): CsrProblem[] {
  const problems: CsrProblem[] = []
  const add = (field: string, kind: CsrProblem['kind'], reason: string) =>
    problems.push({ field, kind, reason })
  if (!csr.signatureValid) add('signature', 'invalid', 'does not verify with the request’s own key')

  const orgs = csr.organizations
  if (orgs.length !== 1 || orgs[0] !== NODES_GROUP)
    add(
      'subject O',
      orgs.some((o) => o !== NODES_GROUP) ? 'forbidden' : 'invalid',
      `${JSON.stringify(orgs)}; want exactly ["${NODES_GROUP}"]`,
    )

  const name = claimedNodeName(csr)
  if (name === undefined)
    add(
      'subject CN',
      'invalid',
      `${JSON.stringify(csr.commonNames)}; want exactly one "${NODE_NAME_PREFIX}<node name>"`,
    )
  else if (!isRfc1123Name(name))
    add(
      'subject CN',
      'invalid',
      `node name ${JSON.stringify(name)} is not an RFC 1123 name (lower-case a-z, 0-9, - and .)`,
    )
  else if (ctx.expectedNodeName !== undefined && name !== ctx.expectedNodeName)
    add(
      'subject CN',
      'forbidden',
      `node name ${JSON.stringify(name)}; this node is ${JSON.stringify(ctx.expectedNodeName)}`,
    )

  const keyProblem = keyPolicyProblem(csr.key)
  if (keyProblem) add('key', 'invalid', keyProblem)

  if (csr.ipAddresses.length === 0)
    add('IP SAN', 'invalid', `none; want the node's address ${ctx.peerAddress}`)
  for (const ip of csr.ipAddresses) {
    if (ipBytes(ip) === undefined) add('IP SAN', 'invalid', `${JSON.stringify(ip)} is not an IP address`)
    // every loopback address is this host's: nodes sharing one host (`mini` without namespaces)
    // connect from 127.0.0.1 and may name their own loopback address, never a reachable one
    else if (!sameIp(ip, ctx.peerAddress) && !(isLoopback(ip) && isLoopback(ctx.peerAddress)))
      add('IP SAN', 'forbidden', `${ip} is not the address the request came from (${ctx.peerAddress})`)
  }
  for (const dns of csr.dnsNames)
    if (dns !== name) add('DNS SAN', 'forbidden', `${JSON.stringify(dns)}; a node may name only itself`)
  return problems
}

function keyPolicyProblem(key: CsrKey): string | undefined {
  switch (key.type) {
    case 'ec':
      return key.namedCurve === P256_CURVE ? undefined : `ECDSA on curve ${key.namedCurve}; want P-256`
    case 'rsa':
      return key.modulusLength >= MIN_RSA_MODULUS_BITS
        ? undefined
        : `RSA ${key.modulusLength} bits; want at least ${MIN_RSA_MODULUS_BITS}`
    case 'other':
      return `${key.algorithm}; want ECDSA P-256 or RSA of at least ${MIN_RSA_MODULUS_BITS} bits`
  }
}
