/**
 * A node's metadata from a metadata service, in the shape of Constellation's QEMU metadata API
 * (constellation.md §3.4): GET /self and /peers (InstanceMetadata: Name, Role, VPCIP, …),
 * /endpoint (a JSON string, the load balancer's host; the API server port is always API_SERVER_PORT) and
 * /initsecrethash (the raw bcrypt hash). Answers are checked like the node config itself, and a
 * service that is not up yet is asked again for a while, as a booting VM may start before it.
 */
import { request } from 'node:http'
import { isIP } from 'node:net'
import { API_SERVER_PORT } from '../contract/index.js'
import { CliError } from '../errors/index.js'
import { formatHostPort, retry, type RetryOptions } from '../system/index.js'
import type { NodeConfig, NodeMember, ResolvedMetadata } from './index.js'

/** A node config whose metadata (if any) is static: what every daemon works with. */
export type ResolvedNodeConfig = Omit<NodeConfig, 'metadata'> & { metadata?: ResolvedMetadata }

export interface MetadataClient {
  /**
   * The body of GET `url`+`path`; rejects on anything but 200 within the client's bounds.
   * `localAddress`: the address the request leaves from (the service tells nodes apart by it).
   */
  get(url: string, path: string, localAddress?: string): Promise<string>
}

const MAX_BODY_BYTES = 1024 * 1024
const REQUEST_TIMEOUT_MS = 10_000

/** A small GET on node:http (no undici: the bootstrapper's memory budget), bounded in time and size. */
export function httpMetadataClient(timeoutMs = REQUEST_TIMEOUT_MS): MetadataClient {
  return {
    get: (url, path, localAddress) =>
      new Promise<string>((resolve, reject) => {
        const req = request(new URL(path, url), { timeout: timeoutMs, localAddress }, (res) => {
          const chunks: Buffer[] = []
          let bytes = 0
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length
            if (bytes > MAX_BODY_BYTES)
              req.destroy(new Error(`GET ${path}: the answer exceeds ${MAX_BODY_BYTES} bytes`))
            else chunks.push(chunk)
          })
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8')
            if (res.statusCode === 200) resolve(body)
            else reject(new Error(`GET ${path}: HTTP ${res.statusCode ?? '?'}`))
          })
          res.on('error', reject)
        })
        req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)))
        req.on('error', reject)
        req.end()
      }),
  }
}

/** Retries while the service is not there yet: ~1 minute in all, then the node gives up (exit 1). */
const DEFAULT_RETRY: Omit<RetryOptions, 'retryable'> = {
  attempts: 8,
  initialDelayMs: 500,
  maxDelayMs: 15_000,
}

/** The config with static metadata: as given, or fetched from the http provider's service. */
export async function resolveMetadata(
  config: NodeConfig,
  client: MetadataClient,
  retryOptions: Partial<Omit<RetryOptions, 'retryable'>> = {},
): Promise<ResolvedNodeConfig> {
  const metadata = config.metadata
  if (metadata?.provider !== 'http') return { ...config, metadata }
  const { url, sourceAddress } = metadata
  const ask = async <T>(path: string, read: (body: string) => T): Promise<T> => {
    const body = await retry(() => client.get(url, path, sourceAddress), {
      ...DEFAULT_RETRY,
      ...retryOptions,
      retryable: () => true,
    }).catch((cause: unknown) => {
      throw new Error(`asking the metadata service ${url} for ${path}`, { cause })
    })
    try {
      return read(body)
    } catch (cause) {
      // outside input, not a bug of ours: the node gives up with exit 1, naming the path
      throw new CliError(`the metadata service ${url} answered ${path} with something else`, {
        cause,
        hint: `check what the metadata service at ${url} serves for ${path}`,
      })
    }
  }
  const self = await ask('/self', (b) => member(JSON.parse(b)))
  const peers = await ask('/peers', parsePeers)
  const endpointHost = await ask('/endpoint', (b) => {
    const host: unknown = JSON.parse(b)
    if (typeof host !== 'string' || host === '' || /[\s/]/.test(host)) throw new Error('not a host name')
    return host
  })
  const initSecretHash =
    config.initSecretHash ??
    (await ask('/initsecrethash', (b) => {
      if (!/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(b.trim())) throw new Error('not a bcrypt hash')
      return b.trim()
    }))
  const resolved: ResolvedMetadata = {
    provider: 'static',
    self,
    peers,
    loadBalancerEndpoint: formatHostPort(endpointHost, API_SERVER_PORT),
    service: { url, ...(sourceAddress ? { sourceAddress } : {}) },
  }
  return { ...config, initSecretHash, metadata: resolved }
}

/** GET /peers once, without retries (a caller that asks again has its own pace): every instance listed. */
export async function fetchMetadataPeers(
  client: MetadataClient,
  service: { url: string; sourceAddress?: string },
): Promise<NodeMember[]> {
  const body = await client.get(service.url, '/peers', service.sourceAddress)
  try {
    return parsePeers(body)
  } catch (cause) {
    throw new Error(`the metadata service ${service.url} answered /peers with something else`, { cause })
  }
}

function parsePeers(body: string): NodeMember[] {
  const list: unknown = JSON.parse(body)
  if (!Array.isArray(list)) throw new Error('not a list')
  return list.map(member)
}

/** Constellation's InstanceMetadata (Go field names; Role "ControlPlane" or "Worker"). */
function member(value: unknown): NodeMember {
  const m = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  const role = m.Role === 'ControlPlane' ? 'control-plane' : m.Role === 'Worker' ? 'worker' : undefined
  if (typeof m.Name !== 'string' || m.Name === '') throw new Error('an instance without a Name')
  if (!role)
    throw new Error(`instance ${m.Name}: Role ${JSON.stringify(m.Role)} is not ControlPlane or Worker`)
  if (typeof m.VPCIP !== 'string' || isIP(m.VPCIP) === 0)
    throw new Error(`instance ${m.Name}: VPCIP ${JSON.stringify(m.VPCIP)} is not an IP address`)
  return { name: m.Name, role, vpcIP: m.VPCIP }
}
