/**
 * kubeadm bootstrap tokens: `[a-z0-9]{6}.[a-z0-9]{16}`, short-lived, stored as the
 * `bootstrap-token-<id>` Secret in kube-system that makes the API server accept them (capi.md §2.2,
 * kubeadm's BootstrapTokenToSecret). Bootstrap data and the join service both issue them.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { KubeApi, SecretObject } from './api.js'
import { KubeApiError } from './client.js'

export type RandomBytes = (size: number) => Uint8Array
/** Constellation's KubernetesJoinTokenTTL: long enough for one `kubeadm join`, short if leaked. */
export const BOOTSTRAP_TOKEN_TTL_MS = 15 * 60_000
/** kubeadm's NodeBootstrapTokenAuthGroup: the group its RBAC lets post CSRs and read cluster-info. */
const NODE_BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token'
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
// Bytes at or above this are dropped, so every character is equally likely.
const UNBIASED_LIMIT = 256 - (256 % ALPHABET.length)
const TOKEN_CHARS = 6 + 16
/** A taken ID (1 in 36^6 per live token) is retried with a fresh token this many times in all. */
const ISSUE_ATTEMPTS = 3

export interface BootstrapToken {
  /** Public: names the Secret. */
  id: string
  /** Never logged. */
  secret: string
  expires: Date
}

/** A pure function of the random source, so that bootstrap data's golden files stay stable. */
export function generateBootstrapToken(random: RandomBytes, now: Date, ttlMs: number): BootstrapToken {
  const chars: string[] = []
  while (chars.length < TOKEN_CHARS) {
    for (const b of random(32)) {
      if (b < UNBIASED_LIMIT && chars.length < TOKEN_CHARS)
        chars.push(ALPHABET[b % ALPHABET.length] as string)
    }
  }
  return {
    id: chars.slice(0, 6).join(''),
    secret: chars.slice(6).join(''),
    expires: new Date(now.getTime() + ttlMs),
  }
}

/** The string `kubeadm join --token` takes. */
export const tokenString = (t: BootstrapToken): string => `${t.id}.${t.secret}`

/** Go's time.RFC3339 in UTC, as kubeadm writes `expiration`: whole seconds, `Z`. */
const rfc3339 = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z')

/**
 * Labels a bootstrap-token Secret issued for one node, so that retiring the node finds its tokens
 * (`constellation node remove`): SHA-256 of the node name, cut to a label value's 63 characters.
 */
export const BOOTSTRAP_TOKEN_NODE_LABEL = 'constellation.io/bootstrap-token-node'
export const tokenNodeLabelValue = (node: string): string =>
  createHash('sha256').update(node).digest('hex').slice(0, 63)

/**
 * The Secret kubeadm builds for a node-join token; `description` says who issued it, `node` (when
 * known) whom it was issued to (a label and the description).
 */
export function bootstrapTokenSecret(
  token: BootstrapToken,
  description: string,
  node?: string,
): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `bootstrap-token-${token.id}`,
      namespace: 'kube-system',
      ...(node === undefined ? {} : { labels: { [BOOTSTRAP_TOKEN_NODE_LABEL]: tokenNodeLabelValue(node) } }),
    },
    type: 'bootstrap.kubernetes.io/token',
    stringData: {
      'token-id': token.id,
      'token-secret': token.secret,
      expiration: rfc3339(token.expires),
      'usage-bootstrap-signing': 'true',
      'usage-bootstrap-authentication': 'true',
      'auth-extra-groups': NODE_BOOTSTRAP_TOKEN_GROUP,
      description: node === undefined ? description : `${description} for node ${JSON.stringify(node)}`,
    },
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
  register(secret: SecretObject): Promise<void>
}

/** Secrets through the API; a taken name (409) is TokenIdTakenError, so the issuer draws again. */
export function apiTokenRegistrar(api: Pick<KubeApi, 'createSecret'>): TokenRegistrar {
  return {
    async register(secret) {
      try {
        await api.createSecret(secret)
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409)
          throw new TokenIdTakenError(secret.metadata.name.replace(/^bootstrap-token-/, ''))
        throw err
      }
    },
  }
}

export interface TokenIssuer {
  /** A fresh, registered token string, valid for the TTL; `node` is whom it is for (its Secret says so). */
  issue(node?: string): Promise<string>
}

export interface TokenIssuerOptions {
  ttlMs?: number
  random?: RandomBytes
  description?: string
}

export function createTokenIssuer(
  registrar: TokenRegistrar,
  clock: () => Date,
  opts: TokenIssuerOptions = {},
): TokenIssuer {
  const description = opts.description ?? 'Bootstrap token issued by the constellation join service'
  return {
    async issue(node) {
      for (let attempt = 1; ; attempt++) {
        const token = generateBootstrapToken(
          opts.random ?? randomBytes,
          clock(),
          opts.ttlMs ?? BOOTSTRAP_TOKEN_TTL_MS,
        )
        try {
          await registrar.register(bootstrapTokenSecret(token, description, node))
          return tokenString(token)
        } catch (err) {
          if (!(err instanceof TokenIdTakenError) || attempt >= ISSUE_ATTEMPTS)
            throw new Error(`registering bootstrap token ${token.id}`, { cause: err })
        }
      }
    },
  }
}
