/** Where a joining node looks for join services: as Constellation's JoinClient, the load balancer first, then every control plane. */
import { DEFAULT_JOIN_SERVICE_LISTEN, type NodeConfig, type StaticMetadata } from '../../nodeconfig/index.js'
import { formatHostPort, parseHostPort } from '../../system/index.js'

/**
 * HOST:PORT of each join service to try, in order: the load balancer's host, then the VPC IP of
 * every control-plane peer, all at the join service's port. Duplicates are dropped. The node itself
 * is not left out: on loopback and in small clusters a control plane may share its address.
 */
export function staticJoinEndpoints(
  metadata: Pick<StaticMetadata, 'peers' | 'loadBalancerEndpoint'>,
  joinServicePort: number,
): string[] {
  const hosts = [
    ...(metadata.loadBalancerEndpoint ? [parseHostPort(metadata.loadBalancerEndpoint).host] : []),
    ...metadata.peers.filter((p) => p.role === 'control-plane').map((p) => p.vpcIP),
  ]
  return [...new Set(hosts)].map((host) => formatHostPort(host, joinServicePort))
}

/** The join services a node asks (staticJoinEndpoints), at the port its config's joinService.listen names. */
export function nodeJoinEndpoints(
  config: Pick<NodeConfig, 'joinService'> & {
    metadata: Pick<StaticMetadata, 'peers' | 'loadBalancerEndpoint'>
  },
): string[] {
  const { port } = parseHostPort(config.joinService?.listen ?? DEFAULT_JOIN_SERVICE_LISTEN, {
    requirePort: true,
    allowPortZero: true,
  })
  return staticJoinEndpoints(config.metadata, port)
}
