/** Stand-ins (TEST DOUBLES) for confidential-VM hardware, for machines without a CVM. */
export type { ProduceEvidence } from './configfs-tsm.js'
export { hostConfigfsTsmStandIn } from './configfs-tsm-host.js'
export { produceSnpEvidence, produceTdxEvidence } from './configfs-tsm-produce.js'
