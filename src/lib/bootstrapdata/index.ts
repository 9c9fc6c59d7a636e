/** Cluster-API-style bootstrap data: KubeadmConfig objects → cloud-config / Ignition, attested mode, offload. */
export { generateBootstrapData } from './generate.js'
export type { GenerateDeps, GenerateResult } from './generate.js'
export { renderGenerateResult } from './render.js'
export { loadTemplates } from './templates.js'
export {
  createS3Store,
  DEFAULT_MAX_USER_DATA_BYTES,
  DEFAULT_PRESIGN_SECONDS,
  MAX_PRESIGN_SECONDS,
} from './offload.js'
export { registerTokenSecret } from './tokens.js'
export { OUTPUT_FORMATS } from './types.js'
export type { OutputFormat } from './types.js'
export { readInputFile } from './io.js'
export { DEFAULT_STATE_DISK } from './attested.js'
export { BootstrapController } from './provider/controller.js'
export type { ControllerOptions } from './provider/controller.js'
export { LeaderLease } from './provider/leader.js'
export { capiResources } from './provider/reconcile.js'
export { initLockConfigMap } from './provider/init-lock.js'

export { openCapiApi } from './provider/capi-api.js'

export type { CapiCluster } from './provider/capi-objects.js'
export { loadOrCreateCaSecrets } from './ca-secrets.js'

export { refreshTokenSecret } from './tokens.js'
export type { TokenRefresh } from './tokens.js'
