export { listenOn, routeGrpcLogs, shutdownGracefully } from './server.js'
export type { CredentialsWithServices } from './server.js'
export { withoutRpcInternals } from './messages.js'
export { normalizeAddress, peerAddress } from './peer-address.js'
