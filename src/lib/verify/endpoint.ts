/** Where `verify` dials: HOST[:PORT] from a flag, or the host of the state's cluster endpoint. */
import { UsageError } from '../errors/index.js'
import { formatHostPort, parseHostPort, type HostPort } from '../system/index.js'

/** The verification service's NodePort in Constellation (VerifyServiceNodePortGRPC). */
export const VERIFY_SERVICE_PORT = 30081

/** HOST, HOST:PORT, [IPv6], [IPv6]:PORT or a bare IPv6 address; `source` names the flag or key in errors. */
function readEndpoint(text: string, source: string): HostPort {
  try {
    return parseHostPort(text, { allowBareIpv6: true })
  } catch {
    // the verify command's own wording, which names the flag or key the text came from
    throw new UsageError(
      `${source} ${JSON.stringify(text)} is not HOST, HOST:PORT or [IPv6]:PORT`,
      `for example 10.0.0.5, 10.0.0.5:${VERIFY_SERVICE_PORT} or [fd00::5]:${VERIFY_SERVICE_PORT}`,
    )
  }
}

/** The gRPC target for a verification service; a bare host gets port 30081 (not gRPC's 443). */
export function verifyServiceTarget(text: string, source: string): string {
  const { host, port } = readEndpoint(text, source)
  return formatHostPort(host, port ?? VERIFY_SERVICE_PORT)
}

/** The state's cluster endpoint names the node; its port is the InitServer's, so only the host is kept. */
export function verifyTargetFromClusterEndpoint(clusterEndpoint: string, source: string): string {
  return formatHostPort(readEndpoint(clusterEndpoint, source).host, VERIFY_SERVICE_PORT)
}
