/**
 * The node side of a cluster's life, one subfolder per job: init/ (the Init RPC and what the node
 * does for it), join/ (the JoinClient and its tickets), kubeadm/, components/ (download, verify,
 * extract), state-disk/ (boot-time setup and a rebooted node's disk key). Here at the root: the
 * daemon, the node lock, runNode (what `bootstrap run` does around the daemon) and this façade.
 */
export { Bootstrapper } from './daemon.js'
export { AttestedKeys, recordingIssuer } from './init/attested-keys.js'
export { InitResultKeeper } from './init/init-result.js'

export type { BootstrapperConfig, JoinClient } from './daemon.js'
export { NodeLock, CLUSTER_ID_PCR } from './node-lock.js'
export { stageComponents } from './components/installer.js'
export type { InstallerDeps } from './components/installer.js'
export { runKubeadmInit } from './kubeadm/kubeadm-init.js'
export { LogCollector } from './logs.js'
export { NodeJoinClient } from './join/join-client.js'
export type { JoinClientDeps, JoinRetrySettings } from './join/join-client.js'
export { nodeJoinEndpoints } from './join/join-endpoints.js'
export { attestedJoinTicketRequester, attestedRejoinTicketRequester } from './join/join-ticket-request.js'
export type { JoinTicketRequester, RejoinTicketRequester } from './join/join-ticket-request.js'
export { runKubeadmJoin } from './kubeadm/kubeadm-join.js'

export { runNode } from './node-run.js'
export { upgradeNode } from './upgrade/node-upgrade.js'
export { UpgradeAgent } from './upgrade/upgrade-agent.js'
export { setupStateDisk } from './state-disk/state-disk-setup.js'
export type { SetupOutcome } from './state-disk/state-disk-setup.js'

export type { RecoveryEndpoint } from './state-disk/disk-key.js'
