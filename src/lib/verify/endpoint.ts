/** Where `verify` dials: HOST[:PORT] from a flag, or the host of the state's cluster endpoint. */
import { formatHostPort, readEndpoint } from '../system/index.js'

/** The verification service's NodePort in Constellation (VerifyServiceNodePortGRPC). */
export const VERIFY_SERVICE_PORT = 30081

/** The gRPC target for a verification service; a bare host gets port 30081 (not gRPC's 443). */
export function verifyServiceTarget(text: string, source: string): string {
  const { host, port } = readEndpoint(text, source, VERIFY_SERVICE_PORT)
  return formatHostPort(host, port ?? VERIFY_SERVICE_PORT)
}

/** The state's cluster endpoint names the node; its port is the InitServer's, so only the host is kept. */
export function verifyTargetFromClusterEndpoint(clusterEndpoint: string, source: string): string {
  return formatHostPort(readEndpoint(clusterEndpoint, source, VERIFY_SERVICE_PORT).host, VERIFY_SERVICE_PORT)
}
