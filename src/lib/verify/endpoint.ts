/** Where `verify` dials: HOST[:PORT] from a flag, or the host of the state's cluster endpoint. */
import { isIP } from 'node:net'
import { UsageError } from '../errors/index.js'

/** The verification service's NodePort in Constellation (VerifyServiceNodePortGRPC). */
export const VERIFY_SERVICE_PORT = 30081

export interface HostPort {
  host: string
  port?: number
}

/** HOST, HOST:PORT, [IPv6], [IPv6]:PORT or a bare IPv6 address; `source` names the flag or key in errors. */
export function parseHostPort(text: string, source: string): HostPort {
  if (isIP(text) === 6) return { host: text }
  const m = /^(?:\[([^\]]*)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/.exec(text)
  const host = m?.[1] ?? m?.[2]
  const port = m?.[3] === undefined ? undefined : Number(m[3])
  const hostOk =
    host !== undefined &&
    (m?.[1] !== undefined
      ? isIP(host) === 6
      : isIP(host) === 4 || /^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$/.test(host))
  if (!hostOk || (port !== undefined && (port < 1 || port > 65535)))
    throw new UsageError(
      `${source} ${JSON.stringify(text)} is not HOST, HOST:PORT or [IPv6]:PORT`,
      `for example 10.0.0.5, 10.0.0.5:${VERIFY_SERVICE_PORT} or [fd00::5]:${VERIFY_SERVICE_PORT}`,
    )
  return { host, port }
}

/** The gRPC target for a verification service; a bare host gets port 30081 (not gRPC's 443). */
export function verifyServiceTarget(text: string, source: string): string {
  const { host, port } = parseHostPort(text, source)
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port ?? VERIFY_SERVICE_PORT}`
}

/** The state's cluster endpoint names the node; its port is the InitServer's, so only the host is kept. */
export function verifyTargetFromClusterEndpoint(clusterEndpoint: string, source: string): string {
  const { host } = parseHostPort(clusterEndpoint, source)
  return verifyServiceTarget(isIP(host) === 6 ? `[${host}]` : host, source)
}
