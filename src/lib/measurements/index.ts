/**
 * Signed reference measurements: cosign-compatible detached signatures, Constellation's
 * measurements JSON, and fetching both under bounds with the signature checked first.
 */
export { loadSigningKey, loadVerifyingKey, signBlob } from './signature.js'
export { parseMeasurementsDocument } from './document.js'
export type { MeasurementsEntry } from './document.js'
export { fetchSignedMeasurements, parseFetchUrl } from './fetch.js'
