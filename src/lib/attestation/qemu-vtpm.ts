/**
 * qemu-vtpm issuer and validator. As in Constellation, the AK is trusted as presented (no CA chain,
 * no instance info): the checks are the quote signature, its binding to userData and the verifier's
 * nonce, the PCR digest, and the measurements. Nothing proves the quote came from real hardware.
 */
import type { Logger } from '../system/index.js'
import { objectName, type OpenTpm } from '../tpm/index.js'
import { decodeDocument, encodeDocument } from './document.js'
import { AttestationError } from './errors.js'
import type { Measurements } from './measurements.js'
import type { Issuer, IssuerOptions, Validator } from './types.js'
import { VARIANT_OIDS } from './variant.js'
import {
  attestationKeyOf,
  checkMeasurements,
  checkSha256Quote,
  issueQuoteDocument,
  parseOrRefuse,
} from './vtpm-quote.js'

export function createQemuVtpmIssuer(open: OpenTpm, opts: IssuerOptions = {}): Issuer {
  return {
    variant: 'qemu-vtpm',
    oid: VARIANT_OIDS['qemu-vtpm'],
    async issue(userData, nonce) {
      return encodeDocument(await issueQuoteDocument(open, userData, nonce, opts))
    },
  }
}

export function createQemuVtpmValidator(measurements: Measurements, log?: Logger): Validator {
  return {
    variant: 'qemu-vtpm',
    oid: VARIANT_OIDS['qemu-vtpm'],
    async validate(raw, nonce, expected) {
      // a caller that expects an activation must not get a pass from a variant that cannot prove one
      if (expected)
        throw new AttestationError(
          'qemu-vtpm attestation cannot prove credential activation, which this verifier expects',
        )
      const doc = decodeDocument(raw)
      const ak = attestationKeyOf(doc.akPub)
      const akName = parseOrRefuse(() => objectName(doc.akPub), 'Attestation.ak_pub')
      const entry = checkSha256Quote(doc, ak, nonce)
      const warnings = checkMeasurements(measurements, entry.pcrs, log)
      return {
        userData: doc.userData,
        pcrs: entry.pcrs,
        warnings,
        akName,
        ...(entry.eventLog && { eventLog: entry.eventLog }),
      }
    },
  }
}
