/** `constellation mini`: a local multi-node cluster. So far: the metadata service its nodes ask, and the Kubernetes simulator. */
export { MetadataServer } from './metadata-server.js'
export type { MetadataView } from './metadata-server.js'
export { FakeApiServer, simulatorPaths } from './simulator/index.js'
export type { FakeApiServerOptions, SimulatorPaths } from './simulator/index.js'
