/**
 * The metadata service of a local cluster, in the shape of Constellation's QEMU metadata API
 * (constellation.md §3.4): a node learns who it is from the address it asks from (GET /self), its
 * peers (/peers), the cluster endpoint's host (/endpoint, a JSON string) and the init secret's
 * bcrypt hash (/initsecrethash). Node configs name it with `metadata: {provider: http, url}`.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { NodeMember } from '../nodeconfig/index.js'
import { formatHostPort, parseHostPort } from '../system/index.js'

export interface MetadataView {
  members: readonly NodeMember[]
  /** The control-plane endpoint's host (the API server port is always API_SERVER_PORT). */
  endpointHost: string
  initSecretHash: string
}

/** Go's field names, as Constellation's InstanceMetadata is serialized. */
const instance = (m: NodeMember) => ({
  Name: m.name,
  ProviderID: `mini://${m.name}`,
  Role: m.role === 'control-plane' ? 'ControlPlane' : 'Worker',
  VPCIP: m.vpcIP,
  SecondaryIPRange: '',
  AliasIPRanges: [],
})

/** IPv4-mapped IPv6 (::ffff:127.0.0.2) is how a dual-stack socket reports an IPv4 peer. */
const plainAddress = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')

export class MetadataServer {
  private server?: Server

  /**
   * `view` is read on every request, with the caller's address: members added later are seen at
   * once (a test double may answer callers differently, as a load balancer may pick another host).
   */
  constructor(private readonly view: (caller: string) => MetadataView) {}

  /** Listens on HOST:PORT (port 0: any free one); resolves with the URL nodes put in their config. */
  async start(listen: string): Promise<string> {
    const { host, port } = parseHostPort(listen, { requirePort: true, allowPortZero: true })
    const server = createServer((req, res) => {
      const send = (status: number, body: string, type = 'application/json') => {
        res.writeHead(status, { 'content-type': type }).end(body)
      }
      const caller = plainAddress(req.socket.remoteAddress ?? '')
      const view = this.view(caller)
      if (req.method !== 'GET') return send(405, JSON.stringify({ error: 'only GET' }))
      switch (req.url) {
        case '/self': {
          const self = view.members.find((m) => m.vpcIP === caller)
          if (!self) return send(404, JSON.stringify({ error: `no instance has the address ${caller}` }))
          return send(200, JSON.stringify(instance(self)))
        }
        case '/peers':
          return send(200, JSON.stringify(view.members.map(instance)))
        case '/endpoint':
          return send(200, JSON.stringify(view.endpointHost))
        case '/initsecrethash':
          return send(200, view.initSecretHash, 'text/plain')
        default:
          return send(404, JSON.stringify({ error: `no such path ${req.url ?? ''}` }))
      }
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => resolve())
    })
    this.server = server
    const bound = server.address() as AddressInfo
    return `http://${formatHostPort(host, bound.port)}`
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
