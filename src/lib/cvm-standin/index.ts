/** TEST DOUBLES at the hardware boundary: stand-ins for confidential-VM firmware where none exists. */
export { createSnpStandIn, loadSnpStandIn, saveSnpStandIn } from './snp.js'
export { createTdxStandIn } from './tdx.js'
export { saveTdxStandIn, loadTdxStandIn } from './tdx-store.js'
export { startConfigfsTsmStandIn } from './configfs-tsm.js'
export type { ProduceEvidence } from './configfs-tsm.js'
export { produceSnpEvidence, produceTdxEvidence } from './configfs-tsm-produce.js'
