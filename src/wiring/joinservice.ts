/**
 * `joinservice` with its production parts: the measurements of the cluster's join-config (followed
 * through the Kubernetes API), the local key service, bootstrap tokens and the control-plane lease
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
import { KeyServiceClient, readNodeMasterSecret } from '../lib/kms/index.js'
import { apiTokenRegistrar, createTokenIssuer, openNodeKubeApi, type KubeApi } from '../lib/kube/index.js'
import {
  fetchMetadataPeers,
  httpMetadataClient,
  loadResolvedNodeConfig,
  type ResolvedMetadata,
  type ResolvedNodeConfig,
} from '../lib/nodeconfig/index.js'
import { nodePaths, type ControlPlaneServiceFileName } from '../lib/paths.js'
import {
  createLogger,
  formatHostPort,
  parseHostPort,
  readRegularFile,
  serveUntilStopped,
  type Logger,
} from '../lib/system/index.js'
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
  const keys = new KeyServiceClient(dialAddress(config.keyService.listen))
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
    keyService: (wanted) => keys.getDataKeys(wanted),
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
      keys.close()
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

/** A wildcard listen address is dialled on loopback: the key service runs on this node (or on its socket). */
function dialAddress(listen: string): string {
  if (listen.startsWith('unix:')) return listen
  const { host, port } = parseHostPort(listen, { requirePort: true })
  const local = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return formatHostPort(local, port)
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
