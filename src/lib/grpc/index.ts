export { listenOn, routeGrpcLogs } from './server.js'
