/** `bootstrap run` itself: load the node config, serve until the node is initialized (or stopped). */
import { CliError } from '../errors/index.js'
import { loadBootstrapperNodeConfig } from '../nodeconfig/index.js'
import { createNodeBootstrapper } from './attested.js'
import type { BootstrapperConfig } from './daemon.js'

export async function runBootstrapService(configPath: string): Promise<void> {
  const config: BootstrapperConfig = await loadBootstrapperNodeConfig(configPath)
  const daemon = createNodeBootstrapper(config)
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void daemon.stop())
  await daemon.start()
  await daemon.done
  if (daemon.outcome === 'failed')
    throw new CliError('init failed after the node lock was taken; this node cannot be used', {
      hint: 'recreate the node',
    })
}
