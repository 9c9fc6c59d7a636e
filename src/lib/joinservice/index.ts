/**
 * The join service: join tickets for attested nodes (disk key, measurement secret, bootstrap token,
 * CA pin, kubelet certificate, control-plane PKI), the join-config it enforces, and what a thin
 * entry wires into it. Building blocks stay internal; tests import their files directly.
 */
export { createJoinService } from './server.js'
export { clusterKubernetesSource } from './cluster-kubernetes.js'

export { MeasurementsStore } from './measurements-store.js'

export { JoinConfigSync } from './join-config-sync.js'
export type { JoinConfigMap } from './join-config-sync.js'
export { updateJoinConfig } from './update-join-config.js'
export type {
  JoinConfigUpdateDeps,
  JoinConfigUpdateOptions,
  JoinConfigUpdateResult,
} from './update-join-config.js'
export { leaseControlPlaneTurns } from './control-plane-turns.js'

export { validatorSourceFrom } from './validator-source.js'

export { loadClusterCa } from './cluster-ca.js'

export { createKubeletSigner } from './kubelet-signer.js'

export { apiStateDiskRegistry } from './state-disks.js'

export { collectStateDisksPeriodically } from './state-disk-collector.js'
export { ownDiskRecord, recordOwnDisk } from './own-disk.js'
export { refreshingMembers, staticMembers } from './members.js'
export type { MemberDirectory } from './members.js'
