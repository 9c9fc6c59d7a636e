/**
 * How a certificate is signed: the AlgorithmIdentifier it names and the node:crypto call that
 * makes the signature. SHA-256 is what our own CAs use; SHA-384 and RSASSA-PSS exist because AMD's
 * SEV-SNP chain uses them (ECDSA P-384 VCEKs, RSA-PSS ARK/ASK) and the SNP stand-in must too.
 */
import { constants, sign, type KeyObject } from 'node:crypto'
import { AsnConvert } from '@peculiar/asn1-schema'
import { AlgorithmIdentifier } from '@peculiar/asn1-x509'

export type SignatureScheme = 'sha256' | 'sha384' | 'rsa-pss-sha384'

// RFC 5758 §3.2: ecdsa-with-SHA* have no parameters; RFC 4055 §5: sha*WithRSAEncryption have NULL.
const ECDSA_WITH: Record<'sha256' | 'sha384', string> = {
  sha256: '1.2.840.10045.4.3.2',
  sha384: '1.2.840.10045.4.3.3',
}
const RSA_WITH: Record<'sha256' | 'sha384', string> = {
  sha256: '1.2.840.113549.1.1.11',
  sha384: '1.2.840.113549.1.1.12',
}
const EC_CURVE_FOR: Record<'sha256' | 'sha384', string> = { sha256: 'prime256v1', sha384: 'secp384r1' }

/**
 * RFC 4055 RSASSA-PSS AlgorithmIdentifier with SHA-384, MGF1 with SHA-384, salt length 48 and
 * trailer field 1: byte for byte what AMD's ARKs, ASKs and VCEKs name as their signature algorithm.
 */
const RSA_PSS_SHA384_DER =
  '304606092a864886f70d01010a3039a00f300d06096086480165030402020500a11c301a06092a864886f70d010108' +
  '300d06096086480165030402020500a203020130a303020101'
const PSS_SALT_BYTES = 48

/** The AlgorithmIdentifier a certificate or request signed by the key with this scheme names. */
export function algorithmFor(key: KeyObject, scheme: SignatureScheme = 'sha256'): AlgorithmIdentifier {
  const type = key.asymmetricKeyType
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (scheme === 'rsa-pss-sha384') {
    if (type === 'rsa' || type === 'rsa-pss')
      return AsnConvert.parse(Buffer.from(RSA_PSS_SHA384_DER, 'hex'), AlgorithmIdentifier)
  } else if (type === 'ec' && curve === EC_CURVE_FOR[scheme]) {
    return new AlgorithmIdentifier({ algorithm: ECDSA_WITH[scheme] })
  } else if (type === 'rsa') {
    return new AlgorithmIdentifier({ algorithm: RSA_WITH[scheme], parameters: null })
  }
  throw new Error(
    `signing key type ${type ?? 'unknown'}${curve ? ` (${curve})` : ''} is not supported with scheme ${scheme}; ` +
      'use ECDSA P-256 or RSA for sha256, ECDSA P-384 or RSA for sha384, RSA for rsa-pss-sha384',
  )
}

/** Signs the DER the algorithm covers; algorithmFor must have accepted (key, scheme). */
export function signWith(scheme: SignatureScheme, data: Buffer, key: KeyObject): Buffer {
  if (scheme === 'rsa-pss-sha384')
    return sign('sha384', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: PSS_SALT_BYTES })
  return sign(scheme, data, key)
}
