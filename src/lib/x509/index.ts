/**
 * The one X.509 module: names, extensions, keys, certificates and PKCS#10 requests encoded from
 * @peculiar/asn1-x509's RFC 5280 and @peculiar/asn1-csr's RFC 2986 schemas (DER by
 * @peculiar/asn1-schema), signed and verified by node:crypto. node-forge cannot sign
 * with ECDSA keys; @peculiar/x509 signs through WebCrypto and a DI container (tsyringe +
 * reflect-metadata) that cost every CLI and bootstrapper process ~0.1 s and ~10 MB to load.
 */
export {
  certificateExtensions,
  parseCertificate,
  pemOfSigned,
  randomSerialNumber,
  signCertificate,
  toPem,
} from './certificate.js'
export type { CertificateExtension } from './certificate.js'
export { readCertificateView, subjectOf } from './certificate-view.js'
export type { CertificateView } from './certificate-view.js'
export {
  caBasicConstraints,
  extendedKeyUsage,
  keyUsage,
  subjectAltName,
  subjectKeyIdentifier,
} from './extensions.js'
export { createCsr, parseCsr } from './csr.js'
export { generateEcdsaP256KeyPair, generateEcdsaP384KeyPair, generateRsaKeyPair } from './keys.js'
export { distinguishedName } from './name.js'
export { decodeDerIa5String, decodeDerInteger, encodeDerIa5String, encodeDerInteger } from './der-values.js'
