/** Stand-ins (TEST DOUBLES) for confidential-VM hardware, for machines without a CVM. */
export { startConfigfsTsmStandIn } from './configfs-tsm.js'
export type { ConfigfsTsmStandIn, ConfigfsTsmStandInOptions, ProduceEvidence } from './configfs-tsm.js'
