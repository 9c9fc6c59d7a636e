/** The node side of init: daemon, Init RPC, node lock, state disk, installer, kubeadm. */
export { Bootstrapper, NodeBootstrappedError } from './daemon.js'
export type { BootstrapperConfig, BootstrapperParts, BootstrapperSettings, JoinClient } from './daemon.js'
export { NodeLock, NodeLockedError, CLUSTER_ID_PCR } from './node-lock.js'
export type { PcrExtender } from './node-lock.js'
export { CryptsetupDisk, CRYPTSETUP } from './disk.js'
export {
  checkComponents,
  stageComponents,
  installTarget,
  decodeDataUrl,
  TRANSIENT_HTTP_STATUSES,
} from './installer.js'
export type { Component, InstallerDeps, StagedComponents } from './installer.js'
export { httpGet, MAX_REDIRECTS, DEFAULT_DOWNLOAD_LIMITS, DownloadTooLargeError } from './http-get.js'
export type { HttpGet, HttpGetOptions, HttpResponse, DownloadLimits } from './http-get.js'
export { extractTarGz, UnsafeArchiveError, MAX_EXTRACTED_BYTES } from './tar-extract.js'
export { renderKubeadmInitConfig, kubeadmPaths, skippedInitPhases } from './kubeadm-config.js'
export type { KubeadmInitInput } from './kubeadm-config.js'
export { runKubeadmInit } from './kubeadm.js'
export { LogCollector, chunk, LOG_CHUNK_BYTES, ATTEMPT_LOG_LIMIT_BYTES } from './logs.js'
export { redactCredentials } from './logs.js'
export { initializeNode, InitSecretError, ComponentsUnavailableError } from './init-node.js'
export { InitHandler } from './init-server.js'
