/** TEST DOUBLES at the hardware boundary: stand-ins for confidential-VM firmware where none exists. */
export { createSnpStandIn, loadSnpStandIn, saveSnpStandIn, SNP_STANDIN_DEFAULT_POLICY } from './snp.js'
export type { SnpStandIn, SnpStandInReportFields, SnpStandInTcb } from './snp.js'
export type { ProduceEvidence } from './configfs-tsm.js'
export { hostConfigfsTsmStandIn } from './configfs-tsm-host.js'
export { produceSnpEvidence, produceTdxEvidence } from './configfs-tsm-produce.js'
