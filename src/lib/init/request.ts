/** Builds the InitRequest from the workspace: data in, message out. */
import type { InitRequest } from '../../gen/init.js'
import { configuredAttestation, type ClusterConfig, type ClusterState } from '../config/index.js'
import { clusterKmsUri, NO_STORE_URI, type MasterSecret } from '../kms/index.js'
import { formatHostPort, parseHostPort } from '../system/index.js'
import { componentsFor } from '../versions/index.js'

export const INIT_SERVER_PORT = 9000

export function buildInitRequest(
  config: ClusterConfig,
  state: ClusterState,
  secret: MasterSecret,
  measurementSalt: Buffer,
  conformance: boolean,
): InitRequest {
  const components = config.kubernetesComponents
    ? config.kubernetesComponents.map((c) => ({
        url: c.url,
        hash: c.hash ?? '',
        installPath: c.installPath,
        extract: c.extract ?? false,
      }))
    : componentsFor(config.kubernetesVersion)
  const measurements: InitRequest['measurements'] = {}
  // whichever variant the config has: the join services enforce these on every joining node
  for (const [pcr, m] of Object.entries(configuredAttestation(config).measurements))
    measurements[Number(pcr)] = { expected: Buffer.from(m.expected, 'hex'), warnOnly: m.warnOnly }
  return {
    kmsUri: clusterKmsUri(secret),
    storageUri: NO_STORE_URI,
    measurementSalt,
    kubernetesVersion: config.kubernetesVersion,
    conformanceMode: conformance,
    kubernetesComponents: components,
    initSecret: Buffer.from(state.infrastructure.initSecret, 'hex'),
    clusterName: state.infrastructure.name,
    apiserverCertSans: state.infrastructure.apiServerCertSANs,
    serviceCidr: config.serviceCIDR,
    measurements,
    resumeProof: Buffer.alloc(0),
  }
}

/** `host` or `host:port` from the state → where the InitServer listens (port 9000 unless named). */
export function initEndpoint(clusterEndpoint: string): { host: string; address: string } {
  const { host, port } = parseHostPort(clusterEndpoint)
  return { host, address: formatHostPort(host, port ?? INIT_SERVER_PORT) }
}
