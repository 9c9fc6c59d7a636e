/**
 * `constellation mini`: a local multi-node cluster of real node software, Kubernetes SIMULATED by
 * the project's contract fakes (the simulator domain), and the metadata service its nodes ask.
 */
export { MetadataServer } from './metadata-server.js'
export type { MetadataView } from './metadata-server.js'
export { clusterNotice, miniUp, rebootNode, SIMULATED_NOTICE, simulatedNotice } from './cluster.js'
export { miniDown } from './down.js'
export type { MachineKind } from './machines.js'
export type { MiniIo, MiniUpOptions, MiniUpResult } from './cluster.js'
export type { MiniDownOptions, MiniDownResult } from './down.js'
export { readMiniRecord } from './layout.js'
export { addMiniNode, removeMiniNode } from './membership.js'
export type { MiniRemoveResult } from './membership.js'
export { simulatedEtcd } from './etcd.js'
export type { MiniNodeRecord } from './layout.js'
export type { NetworkMode } from './network.js'
export { NodeSupervisor } from './supervisor.js'

export { readMachineSpec, SUPERVISOR_MARKER, SYSTEMCTL_SOCKET_ENV } from './machine.js'
export { NODE_MARKER, killGroup, spawnInGroup, stopMarked } from './daemons.js'
export { mergeMiniKubeconfig } from './kubeconfig.js'
export type { MergedKubeconfig } from './kubeconfig.js'
export { showNodeLogs } from './logs.js'
export { MINI_CVM_VARIANTS, standInEvidence } from './cvm.js'
export { measureNodeBoot } from './measured-boot.js'
export { execOnNode } from './exec.js'
export type { NodeExecResult } from './exec.js'
