/** Stand-ins (TEST DOUBLES) for confidential-VM hardware, for machines without a CVM. */
export { startConfigfsTsmStandIn } from './configfs-tsm.js'
export type { ConfigfsTsmStandIn, ConfigfsTsmStandInOptions, ProduceEvidence } from './configfs-tsm.js'
export { hostConfigfsTsmStandIn } from './configfs-tsm-host.js'
export type { ConfigfsTsmHostOptions } from './configfs-tsm-host.js'
export { produceSnpEvidence, produceTdxEvidence } from './configfs-tsm-produce.js'
export type { SnpEvidenceSource, TdxEvidenceSource } from './configfs-tsm-produce.js'
