/**
 * `joinservice` with its production parts: the measurements of the cluster's join-config (followed
 * through the Kubernetes API), the node's master secret, bootstrap tokens and the control-plane lease
 * in the Kubernetes API, the cluster CA kubeadm wrote on this control plane, JSON logs.
 */
import { apiServerEndpoint } from '../lib/contract/index.js'
import { createValidator, encodeJoinConfig, JOIN_CONFIG_MAP } from '../lib/attestation/index.js'
import { routeGrpcLogs } from '../lib/grpc/index.js'
import {
  apiStateDiskRegistry,
  collectStateDisksPeriodically,
  clusterKubernetesSource,
  createJoinService,
  createKubeletSigner,
  JoinConfigSync,
  leaseControlPlaneTurns,
  loadClusterCa,
  MeasurementsStore,
  ownDiskRecord,
  recordOwnDisk,
  refreshingMembers,
  staticMembers,
  validatorSourceFrom,
  type JoinConfigMap,
  type MemberDirectory,
} from '../lib/joinservice/index.js'
import { ClusterKms, readNodeMasterSecret } from '../lib/kms/index.js'
import { apiTokenRegistrar, createTokenIssuer, openNodeKubeApi, type KubeApi } from '../lib/kube/index.js'
import {
  fetchMetadataPeers,
  httpMetadataClient,
  loadResolvedNodeConfig,
  type ResolvedMetadata,
  type ResolvedNodeConfig,
} from '../lib/nodeconfig/index.js'
import { nodePaths, type ControlPlaneServiceFileName } from '../lib/paths.js'
import { createLogger, readRegularFile, serveUntilStopped, type Logger } from '../lib/system/index.js'
import { readComponentsFile } from '../lib/versions/index.js'
import { attestationKeyName, withTpm } from '../lib/tpm/index.js'
import { nodeValidatorOptions, openTpmFromConfig } from './node.js'

/** The join service and what runs beside it; stop() ends all of it. */
export interface NodeJoinService {
  start(): Promise<string>
  stop(): Promise<void>
  readonly done: Promise<void>
}

export async function createNodeJoinService(
  config: ResolvedNodeConfig,
  log: Logger,
): Promise<NodeJoinService> {
  const paths = nodePaths(config.root)
  const clock = () => new Date()
  // before anything else: a tpm-ek join service without its roots could admit no node
  const validatorOptions = nodeValidatorOptions(config)
  const api = await openNodeKubeApi(config.kubeconfig)
  const sync = new JoinConfigSync({ configMap: joinConfigMap(api), file: paths.joinConfigFile, logger: log })
  // The cluster's current set before the first handshake; the local copy when the API is away.
  await sync.syncOnce()
  const store = await MeasurementsStore.open({ file: paths.joinConfigFile, logger: log })
  const [ca, masterSecret, measurementSalt] = await Promise.all([
    loadClusterCa(paths.kubernetesPki),
    readNodeMasterSecret(paths),
    readRegularFile(paths.measurementSaltFile, { maxBytes: 1024, what: 'measurement salt' }),
  ])
  // This process holds the node's master secret anyway (a joining control plane gets it in its
  // ticket), so a ticket's keys are derived here, with the key service's own HKDF, instead of in
  // two gRPC round trips to the key service beside it (1-2 ms of CPU per ticket, both ends
  // together, of about 10 ms in bench/join.bench.ts).
  const keys = new ClusterKms(masterSecret.key, masterSecret.salt)
  const stateDisks = apiStateDiskRegistry(api)
  const stopped = new AbortController()
  const serviceFiles: Record<ControlPlaneServiceFileName, () => Buffer> = {
    'constellation/mastersecret': () => masterSecret.key,
    'constellation/salt': () => masterSecret.salt,
    'constellation/join-config.json': () => Buffer.from(encodeJoinConfig(store.current())),
  }
  const service = createJoinService({
    listen: config.joinService?.listen ?? '',
    validatorSource: validatorSourceFrom(store, (m) =>
      createValidator(config.attestationVariant, m, undefined, validatorOptions),
    ),
    keyService: (id, length) => Promise.resolve(keys.deriveDataKey(id, length)),
    tokens: createTokenIssuer(apiTokenRegistrar(api), clock),
    kubeletSigner: createKubeletSigner({ ...ca, clock }),
    ca,
    controlPlaneServiceFiles: () =>
      Promise.resolve(Object.entries(serviceFiles).map(([name, data]) => ({ name, data: data() }))),
    kubernetes: clusterKubernetesSource({
      api,
      localComponents: () => readComponentsFile(paths.componentsFile),
    }),
    stateDisks,
    cluster: { measurementSalt, apiServerEndpoint: apiServerEndpoint(metadataOf(config)) },
    members: memberDirectory(config),
    controlPlaneTurns: leaseControlPlaneTurns({ api, clock, logger: log.child('joinservice') }),
    clock,
    logger: log,
  })
  return {
    done: service.done,
    async start() {
      const address = await service.start()
      await sync.start()
      const own = () =>
        ownDiskRecord({
          paths,
          self: config.metadata?.self,
          readAttestationKeyName: () => withTpm(openTpmFromConfig(config.tpm), attestationKeyName),
          clock,
        })
      void recordOwnDisk(stateDisks, own, log, stopped.signal)
      collectStateDisksPeriodically({
        stateDisks,
        hasNode: (n) => api.hasNode(n),
        clock,
        log,
        signal: stopped.signal,
      })
      return address
    },
    async stop() {
      stopped.abort(new Error('the join service is stopping'))
      await sync.stop()
      await service.stop()
      store.close()
    },
  }
}

/** `joinservice` itself: load the node config, serve until stopped. */
export async function runJoinService(configPath: string): Promise<void> {
  const config = await loadResolvedNodeConfig(configPath, { require: ['metadata'] })
  const log = createLogger({ format: 'json' })
  routeGrpcLogs(log)
  await serveUntilStopped(await createNodeJoinService(config, log))
}

function joinConfigMap(api: KubeApi): JoinConfigMap {
  const { namespace, name, key } = JOIN_CONFIG_MAP
  return {
    read: async () => (await api.getConfigMap(namespace, name))?.data[key],
    create: (text) => api.applyConfigMap(namespace, name, { [key]: text }),
  }
}

function metadataOf(config: ResolvedNodeConfig): ResolvedMetadata {
  if (!config.metadata) throw new Error('the join service needs metadata') // runJoinService requires it
  return config.metadata
}

/** Who is in the cluster: the metadata service's list as it changes, or the static list (this node's peers and itself). */
function memberDirectory(config: ResolvedNodeConfig): MemberDirectory {
  const metadata = metadataOf(config)
  const service = metadata.service
  if (!service) return staticMembers([metadata.self, ...metadata.peers])
  const client = httpMetadataClient()
  return refreshingMembers({ fetch: () => fetchMetadataPeers(client, service), clock: Date.now })
}
