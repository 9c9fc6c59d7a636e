/**
 * The cluster's CA set kept as Cluster API keeps it (capi.md §5.1, §5.3): Secrets `<cluster>-ca`,
 * `-etcd`, `-proxy` and `-sa` in the cluster's namespace of a management cluster, type
 * `cluster.x-k8s.io/secret`, data `tls.crt` and `tls.key` (for `-sa`, `tls.crt` is the PKIX public
 * key). A Secret that exists is used as it is and never written (user-provided CAs); a missing one
 * is generated only for the init machine's data, created create-exclusive, and owned by the given
 * object. Errors name the Secret and the key, never a value.
 */
import { CliError } from '../errors/index.js'
import { KubeApiError, type KubeApi, type OwnerReference, type SecretObject } from '../kube/index.js'
import {
  CA_FILES,
  checkPair,
  createCertificateAuthority,
  createServiceAccountKey,
  type PairName,
} from './certs.js'
import {
  CLUSTER_NAME_LABEL,
  CLUSTER_SECRET_TYPE,
  type CertificateAuthorities,
  type KeyPair,
} from './types.js'

/** Only what this module calls: KubeApi (openKubeApi) has both. */
export type CaSecretApi = Pick<KubeApi, 'getSecret' | 'createSecret'>

export const TLS_CERT_KEY = 'tls.crt'
export const TLS_KEY_KEY = 'tls.key'

/** Each pair's Secret name suffix, as `util/secret/consts.go` names the purposes. */
export const CA_SECRET_PURPOSES: Record<PairName, string> = {
  ca: 'ca',
  etcdCa: 'etcd',
  frontProxyCa: 'proxy',
  sa: 'sa',
}

export const caSecretName = (cluster: string, pair: PairName): string =>
  `${cluster}-${CA_SECRET_PURPOSES[pair]}`

/** The object that generated the Secrets (a KubeadmConfig, a Cluster): their controller owner. */
export type CaSecretOwner = Pick<OwnerReference, 'apiVersion' | 'kind' | 'name' | 'uid'>

export interface CaSecretOptions {
  namespace: string
  /** The Cluster's name: the Secrets' name prefix and cluster-name label. */
  cluster: string
  /** Create the missing Secrets (init data); without it a missing one is an error (join data). */
  generate: boolean
  now: Date
  /** Set as the controller ownerReference of the Secrets this call creates (never of existing ones). */
  owner?: CaSecretOwner
}

export interface CaSecretsResult {
  authorities: CertificateAuthorities
  /** `namespace/name` of each Secret this call created. */
  created: string[]
}

const HOW_TO_PROVIDE =
  "the init machine's data creates them; or create them as Cluster API does: a Secret of type " +
  `${CLUSTER_SECRET_TYPE} with data ${TLS_CERT_KEY} (PEM CA certificate; for -sa the PEM public key) ` +
  `and ${TLS_KEY_KEY} (its PEM private key)`

const PAIRS = Object.keys(CA_FILES) as PairName[]

export async function loadOrCreateCaSecrets(
  api: CaSecretApi,
  opts: CaSecretOptions,
): Promise<CaSecretsResult> {
  const { namespace, cluster } = opts
  const ref = (pair: PairName) => `${namespace}/${caSecretName(cluster, pair)}`
  const found = await Promise.all(PAIRS.map((pair) => api.getSecret(namespace, caSecretName(cluster, pair))))
  const pairs: Partial<Record<PairName, KeyPair>> = {}
  const missing: PairName[] = []
  // Every present Secret is checked before anything is created, so a refusal changes nothing.
  PAIRS.forEach((pair, i) => {
    const data = found[i]
    if (data === undefined) missing.push(pair)
    else pairs[pair] = pairFromSecret(pair, data, ref(pair))
  })
  if (missing.length > 0 && !opts.generate) {
    const list = missing.map(ref).join(', ')
    throw new CliError(
      `${missing.length === 1 ? 'Secret' : 'Secrets'} ${list} of Cluster "${cluster}" ${missing.length === 1 ? 'does' : 'do'} not exist: join data needs the cluster's CAs`,
      { hint: HOW_TO_PROVIDE },
    )
  }
  const created: string[] = []
  for (const pair of missing) {
    const generated = pair === 'sa' ? createServiceAccountKey() : createCertificateAuthority(opts.now)
    const name = caSecretName(cluster, pair)
    try {
      await api.createSecret(caSecret(name, generated, opts))
      pairs[pair] = generated
      created.push(ref(pair))
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err
      // Another generator created it between our read and our create: theirs is the cluster's CA.
      const theirs = await api.getSecret(namespace, name)
      if (theirs === undefined)
        throw new CliError(`Secret ${ref(pair)} was created by someone else and then deleted`, {
          hint: 'run again once whatever manages the cluster CAs has settled',
          cause: err,
        })
      pairs[pair] = pairFromSecret(pair, theirs, ref(pair))
    }
  }
  return { authorities: pairs as CertificateAuthorities, created }
}

/** The Secret as Cluster API's `LookupOrGenerate` creates it. */
export function caSecret(name: string, pair: KeyPair, opts: CaSecretOptions): SecretObject {
  const ownerReferences = opts.owner
    ? [{ ...opts.owner, controller: true, blockOwnerDeletion: true }]
    : undefined
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: opts.namespace,
      labels: { [CLUSTER_NAME_LABEL]: opts.cluster },
      ...(ownerReferences ? { ownerReferences } : {}),
    },
    type: CLUSTER_SECRET_TYPE,
    stringData: { [TLS_CERT_KEY]: pair.certPem, [TLS_KEY_KEY]: pair.keyPem },
  }
}

function pairFromSecret(pair: PairName, data: Record<string, string>, ref: string): KeyPair {
  const absent = [TLS_CERT_KEY, TLS_KEY_KEY].filter((k) => !data[k]?.trim())
  if (absent.length > 0)
    throw new CliError(`Secret ${ref} has no ${absent.join(' and no ')} (or an empty one)`, {
      hint: HOW_TO_PROVIDE,
    })
  const given = { certPem: data[TLS_CERT_KEY] ?? '', keyPem: data[TLS_KEY_KEY] ?? '' }
  return checkPair(
    pair,
    given,
    `${TLS_CERT_KEY} of Secret ${ref}`,
    `${TLS_KEY_KEY} of Secret ${ref}`,
    `the Secret must hold the ${pair === 'sa' ? 'public key' : 'CA certificate'} and its own private key`,
  )
}
