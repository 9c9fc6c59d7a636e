export { listenOn, routeGrpcLogs } from './server.js'
export { withoutRpcInternals } from './messages.js'
