/** The node's LUKS2 state disk: its header (format, mark, keys) through cryptsetup, and the mount boundary. */
export { CryptsetupDisk } from './luks.js'
export type { DiskContent } from './luks.js'
export { STATE_DISK_TOKEN_TYPE } from './mark.js'
export type { StateDiskMark } from './mark.js'
export { deviceMapperMounter } from './mount.js'
export type { StateDiskMounter } from './mount.js'
export { RecoveryRefusedError } from './recovery-refused.js'
export { RecoveryServer } from './recovery-server.js'

export { RecoveryAdmission } from './recovery-admission.js'
export type { RecoveryLimits, RefusalReason } from './recovery-admission.js'
