/** The node side of init and join: daemon, Init RPC, JoinClient, node lock, state disk, installer, kubeadm. */
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
export {
  renderKubeadmInitConfig,
  kubeadmApiVersion,
  kubeadmPaths,
  skippedInitPhases,
} from './kubeadm-config.js'
export type { KubeadmInitInput } from './kubeadm-config.js'
export { runKubeadmInit } from './kubeadm.js'
export { LogCollector, chunk, LOG_CHUNK_BYTES, ATTEMPT_LOG_LIMIT_BYTES } from './logs.js'
export { redactCredentials } from './logs.js'
export { initializeNode, InitSecretError, ComponentsUnavailableError } from './init-node.js'
export { InitHandler } from './init-server.js'
export { NodeJoinClient, DEFAULT_JOIN_RETRY, kubernetesNodeName } from './join-client.js'
export type { JoinClientDeps, JoinRetrySettings } from './join-client.js'
export { staticJoinEndpoints } from './join-endpoints.js'
export { attestedJoinTicketRequester, JOIN_TICKET_TIMEOUT_MS } from './join-ticket-request.js'
export type { JoinTicketRequester } from './join-ticket-request.js'
export { JoinFailedError } from './join-node.js'
export { runKubeadmJoin, KUBEADM_JOIN_ATTEMPTS, KUBEADM_JOIN_TIMEOUT_MS } from './kubeadm-join.js'
export type { KubeadmJoinDeps } from './kubeadm-join.js'
export { renderKubeadmJoinConfig } from './kubeadm-join-config.js'
export type { KubeadmJoinInput } from './kubeadm-join-config.js'
