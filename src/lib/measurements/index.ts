/**
 * Signed reference measurements: cosign-compatible detached signatures, Constellation's
 * measurements JSON, and fetching both under bounds with the signature checked first.
 */
export { loadVerifyingKey } from './signature.js'
export type { MeasurementsEntry } from './document.js'
export { fetchSignedMeasurements, parseFetchUrl } from './fetch.js'
export { signMeasurementsFile } from './sign.js'
export type { SignResult } from './sign.js'
