/**
 * Channel targets whose connections leave from a given local address. A node on a host it shares
 * with others (one loopback address each: mini's loopback mode, the join bench) is known to the
 * join service by the address its requests come from, and grpc-js has no source-address option.
 * It does hand a resolver's address object to net.connect as it is, so this scheme's resolver puts
 * `localAddress` beside host and port: one TCP connection per channel, from the right address.
 * (Dialling again from inside the credentials cost the server two dropped connections per call.)
 */
import { experimental, status as grpcStatus, Metadata } from '@grpc/grpc-js'

const SCHEME = 'constellation-from'

/** `target` (HOST:PORT) as a channel target whose connections leave from `localAddress`, if given. */
export function targetLeavingFrom(target: string, localAddress: string | undefined): string {
  if (!localAddress) return target
  registerOnce()
  return `${SCHEME}://${localAddress}/${target}`
}

let registered = false
function registerOnce() {
  if (registered) return
  experimental.registerResolver(SCHEME, LeavingFromResolver)
  registered = true
}

class LeavingFromResolver implements experimental.Resolver {
  private readonly result: experimental.StatusOr<{ addresses: experimental.SubchannelAddress[] }[]>
  private reported = false
  constructor(
    target: experimental.GrpcUri,
    private readonly listener: experimental.ResolverListener,
  ) {
    const hostPort = experimental.splitHostPort(target.path)
    const localAddress = target.authority
    this.result =
      hostPort?.port !== undefined && localAddress
        ? experimental.statusOrFromValue([
            // net.connect reads localAddress from the same object grpc-js passes it
            {
              addresses: [
                { host: hostPort.host, port: hostPort.port, localAddress } as experimental.SubchannelAddress,
              ],
            },
          ])
        : experimental.statusOrFromError({
            code: grpcStatus.UNAVAILABLE,
            details: `not HOST:PORT from a local address: ${experimental.uriToString(target)}`,
            metadata: new Metadata(),
          })
  }
  updateResolution(): void {
    if (this.reported) return
    this.reported = true
    process.nextTick(() => this.listener(this.result, {}, null, ''))
  }
  destroy(): void {
    this.reported = false
  }
  static getDefaultAuthority(target: experimental.GrpcUri): string {
    return target.path
  }
}
