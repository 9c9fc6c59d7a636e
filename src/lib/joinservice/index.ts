/**
 * The join service: join tickets for attested nodes (disk key, measurement secret, bootstrap token,
 * CA pin, kubelet certificate, control-plane PKI), the join-config it enforces, and what a thin
 * entry wires into it. Building blocks stay internal; tests import their files directly.
 */
export { createJoinService, JoinService } from './server.js'
export type { JoinServiceOptions, JoinServiceLimits } from './server.js'
export { MeasurementsStore, JOIN_CONFIG_POLL_INTERVAL_MS } from './measurements-store.js'
export type { MeasurementsSource, MeasurementsStoreOptions } from './measurements-store.js'
export { JoinConfigSync } from './join-config-sync.js'
export type { JoinConfigMap } from './join-config-sync.js'
export { updateJoinConfig } from './update-join-config.js'
export type {
  JoinConfigUpdateDeps,
  JoinConfigUpdateOptions,
  JoinConfigUpdateResult,
} from './update-join-config.js'
export { leaseControlPlaneTurns, CONTROL_PLANE_LEASE } from './control-plane-turns.js'
export type { ControlPlaneTurns } from './control-plane-turns.js'
export { validatorSourceFrom } from './validator-source.js'
export type { ValidatorSource } from './validator-source.js'
export { caCertHash, loadClusterCa, CONTROL_PLANE_PKI_FILES } from './cluster-ca.js'
export type { ClusterCa, ControlPlaneFile } from './cluster-ca.js'
export { createKubeletSigner } from './kubelet-signer.js'
export type { KubeletSigner, KubeletSignerOptions } from './kubelet-signer.js'
export type { CsrFields, CsrKey, CsrParser } from './csr-policy.js'
export type { DataKeyGetter } from './ticket.js'
export { DEFAULT_WORKER_JOIN_CONCURRENCY } from './admission.js'
export { apiStateDiskRegistry, STATE_DISK_CONFIGMAP_PREFIX, STATE_DISK_NAMESPACE } from './state-disks.js'
export type { StateDiskRecord, StateDiskRegistry } from './state-disks.js'
export { collectStateDisksPeriodically } from './state-disk-collector.js'
export { ownDiskRecord, recordOwnDisk } from './own-disk.js'
export { refreshingMembers, staticMembers } from './members.js'
export type { MemberDirectory } from './members.js'
