/**
 * tpm-ek's activation request: what a verifier needs to make a credential before the node has sent
 * any document (join direction). JSON like the attestation document, []byte as standard base64:
 *
 *   {"EndorsementKeyCertificates": ["<DER EK certificate>", "<DER intermediate>", …],
 *    "AkPub": "<TPMT_PUBLIC of the attestation key>"}
 */
import { jsonFields, MAX_EK_CERTIFICATES, MAX_EK_CERTIFICATE_BYTES } from './json-fields.js'

export interface ActivationRequest {
  /** DER, the EK certificate first, then intermediates. */
  ekCertificates: Buffer[]
  /** Marshalled TPMT_PUBLIC of the AK the node quotes with. */
  akPub: Buffer
}

/** A TPMT_PUBLIC of the largest key a TPM makes (RSA 4096) is about 600 bytes. */
const MAX_AK_PUBLIC_BYTES = 2048
const MAX_REQUEST_BYTES = 2 * MAX_EK_CERTIFICATES * MAX_EK_CERTIFICATE_BYTES + 2 * MAX_AK_PUBLIC_BYTES

export const activationRequestFields = jsonFields('activation request')

export function encodeActivationRequest(req: ActivationRequest): Buffer {
  return Buffer.from(
    JSON.stringify({
      EndorsementKeyCertificates: req.ekCertificates.map((c) => c.toString('base64')),
      AkPub: req.akPub.toString('base64'),
    }),
  )
}

export function decodeActivationRequest(raw: Buffer): ActivationRequest {
  const { parse, object, bytes, certificates } = activationRequestFields
  const top = object(parse(raw, MAX_REQUEST_BYTES), 'document')
  return {
    ekCertificates: certificates(top.EndorsementKeyCertificates, 'EndorsementKeyCertificates'),
    akPub: bytes(top.AkPub, 'AkPub', { min: 1, max: MAX_AK_PUBLIC_BYTES }),
  }
}
