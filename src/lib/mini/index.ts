/** `constellation mini`: a local multi-node cluster. So far: the metadata service its nodes ask. */
export { MetadataServer } from './metadata-server.js'
export type { MetadataView } from './metadata-server.js'
