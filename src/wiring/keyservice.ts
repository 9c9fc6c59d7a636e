/** `keyservice` with its production parts: the master secret init persisted on this node, JSON logs. */
import { routeGrpcLogs } from '../lib/grpc/index.js'
import { createKeyService, readNodeMasterSecret, type KeyService } from '../lib/kms/index.js'
import { loadNodeConfig, type NodeConfig } from '../lib/nodeconfig/index.js'
import { nodePaths } from '../lib/paths.js'
import { createLogger, serveUntilStopped, type Logger } from '../lib/system/index.js'

/** Refuses a master secret file that is missing, not 0600, or too short, before it listens. */
export async function createNodeKeyService(config: NodeConfig, log: Logger): Promise<KeyService> {
  const masterSecret = await readNodeMasterSecret(nodePaths(config.root))
  return createKeyService({ listen: config.keyService.listen, masterSecret, logger: log })
}

/** `keyservice` itself: load the node config and the master secret, serve until stopped. */
export async function runKeyService(configPath: string): Promise<void> {
  const config = await loadNodeConfig(configPath)
  const log = createLogger({ format: 'json' })
  routeGrpcLogs(log)
  await serveUntilStopped(await createNodeKeyService(config, log))
}
