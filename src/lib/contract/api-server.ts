/**
 * Where a cluster's API server is reached. kubeadm init writes the endpoint into every kubeconfig,
 * and the join service hands it to joiners: both take it from here, so they cannot disagree.
 */
import { formatHostPort, parseHostPort } from '../system/index.js'

/** kube-apiserver's port on every control plane (Constellation's KubernetesPort). */
export const API_SERVER_PORT = 6443

/** What the endpoint depends on: the node itself and the load balancer in front of the control planes. */
export interface EndpointMetadata {
  self: { vpcIP: string }
  /** HOST or HOST:PORT. */
  loadBalancerEndpoint?: string
}

/**
 * HOST:PORT of the API server: the load balancer's host and port as the metadata names them (as
 * Constellation's joiners dial `<LB host>:<LB port>`), else this control plane itself; a host
 * without a port means API_SERVER_PORT.
 */
export function apiServerEndpoint(metadata: EndpointMetadata): string {
  const { host, port } = endpointOf(metadata)
  return formatHostPort(host, port ?? API_SERVER_PORT)
}

/**
 * The same endpoint as kubeadm init's controlPlaneEndpoint takes it: a port only where the metadata
 * names one, because kubeadm fills in its bind port (API_SERVER_PORT) itself and the kubeconfigs
 * of clusters initialized so far say so.
 */
export function controlPlaneEndpoint(metadata: EndpointMetadata): string {
  const { host, port } = endpointOf(metadata)
  return formatHostPort(host, port)
}

function endpointOf(metadata: EndpointMetadata): { host: string; port?: number } {
  const lb = metadata.loadBalancerEndpoint
  return lb ? parseHostPort(lb) : { host: metadata.self.vpcIP }
}
