/** TEST DOUBLES at the hardware boundary: stand-ins for the vendors' confidential-VM attestation infrastructure. */
export { createTdxStandIn } from './tdx.js'
export type { TdxStandIn, TdxStandInOptions, TdxQuoteFields } from './tdx.js'
export { saveTdxStandIn, loadTdxStandIn } from './tdx-store.js'
export type { StandInCollateralOptions } from './tdx-collateral.js'
