/**
 * kubeadm bootstrap tokens: the short-lived credential a joining node hands to `kubeadm join`, and
 * the kube-system Secret that makes the API server accept it, shaped as kubeadm shapes it.
 */
import { randomInt } from 'node:crypto'

/** Constellation's KubernetesJoinTokenTTL: long enough for one `kubeadm join`, short if leaked. */
export const BOOTSTRAP_TOKEN_TTL_MS = 15 * 60_000
export const BOOTSTRAP_TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/
export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token'
/** kubeadm's NodeBootstrapTokenAuthGroup: the group its RBAC lets post CSRs and read cluster-info. */
export const NODE_BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token'
/** kubeadm's DefaultTokenUsages. */
const TOKEN_USAGES = ['signing', 'authentication'] as const
const TOKEN_DESCRIPTION = 'Bootstrap token issued by the constellation join service'
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
const TOKEN_ID_LENGTH = 6
const TOKEN_SECRET_LENGTH = 16
/** A taken ID (1 in 36^6 per live token) is retried with a fresh token this many times in all. */
const ISSUE_ATTEMPTS = 3

export interface BootstrapToken {
  /** Public: names the Secret. */
  id: string
  /** Never logged. */
  secret: string
  expires: Date
}

/** The `[a-z0-9]{6}.[a-z0-9]{16}` string `kubeadm join --token` takes. */
export const tokenString = (t: BootstrapToken): string => `${t.id}.${t.secret}`

/** crypto-random characters, each uniform over the alphabet (randomInt has no modulo bias). */
function randomChars(length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]
  return out
}

export function generateBootstrapToken(now: Date, ttlMs = BOOTSTRAP_TOKEN_TTL_MS): BootstrapToken {
  return {
    id: randomChars(TOKEN_ID_LENGTH),
    secret: randomChars(TOKEN_SECRET_LENGTH),
    expires: new Date(now.getTime() + ttlMs),
  }
}

export interface BootstrapTokenSecret {
  apiVersion: 'v1'
  kind: 'Secret'
  metadata: { name: string; namespace: 'kube-system' }
  type: typeof BOOTSTRAP_TOKEN_SECRET_TYPE
  /** Standard base64 values, as the API's JSON carries a Secret's data. */
  data: Record<string, string>
}

/** Go's time.RFC3339 in UTC, as kubeadm writes `expiration`: whole seconds, `Z`. */
export const rfc3339 = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z')

/** The Secret kubeadm's BootstrapTokenToSecret builds for a node-join token; pure, for the registrar. */
export function bootstrapTokenSecret(token: BootstrapToken): BootstrapTokenSecret {
  const fields: Record<string, string> = {
    'token-id': token.id,
    'token-secret': token.secret,
    description: TOKEN_DESCRIPTION,
    expiration: rfc3339(token.expires),
    ...Object.fromEntries(TOKEN_USAGES.map((u) => [`usage-bootstrap-${u}`, 'true'])),
    'auth-extra-groups': NODE_BOOTSTRAP_TOKEN_GROUP,
  }
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${token.id}`, namespace: 'kube-system' },
    type: BOOTSTRAP_TOKEN_SECRET_TYPE,
    data: Object.fromEntries(
      Object.entries(fields).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
    ),
  }
}

/** Thrown by a registrar when a Secret of that name exists already (HTTP 409 from the API). */
export class TokenIdTakenError extends Error {
  constructor(readonly tokenId: string) {
    super(`bootstrap token ID ${tokenId} is taken`)
    this.name = 'TokenIdTakenError'
  }
}

/** Where `kubeadm join` will find the token: the Kubernetes API in production. */
export interface TokenRegistrar {
  /** Creates the Secret; rejects with TokenIdTakenError if its name exists. Never echoes the data. */
  register(secret: BootstrapTokenSecret): Promise<void>
}

export interface TokenIssuer {
  /** A fresh, registered token string, valid for the TTL. */
  issue(): Promise<string>
}

export function createTokenIssuer(
  registrar: TokenRegistrar,
  clock: () => Date,
  ttlMs = BOOTSTRAP_TOKEN_TTL_MS,
): TokenIssuer {
  return {
    async issue() {
      for (let attempt = 1; ; attempt++) {
        const token = generateBootstrapToken(clock(), ttlMs)
        try {
          await registrar.register(bootstrapTokenSecret(token))
          return tokenString(token)
        } catch (err) {
          if (!(err instanceof TokenIdTakenError) || attempt >= ISSUE_ATTEMPTS)
            throw new Error(`registering bootstrap token ${token.id}`, { cause: err })
        }
      }
    },
  }
}
