/**
 * The certificate extensions our certificates carry, each with the critical flag RFC 5280
 * recommends for it (§4.2.1.3 keyUsage and §4.2.1.9 basicConstraints of a CA: critical).
 */
import { createHash, type KeyObject } from 'node:crypto'
import { AsnConvert } from '@peculiar/asn1-schema'
import {
  AsnIpConverter,
  BasicConstraints,
  ExtendedKeyUsage,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  id_ce_subjectKeyIdentifier,
  id_kp_clientAuth,
  id_kp_serverAuth,
  KeyUsage,
  KeyUsageFlags,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
} from '@peculiar/asn1-x509'
import type { OctetString } from 'asn1js'
import type { CertificateExtension } from './certificate.js'
import { derElement } from './tbs-certificate.js'

export type KeyUsageName = 'digitalSignature' | 'keyEncipherment' | 'keyCertSign'
export type ExtendedKeyUsageName = 'clientAuth' | 'serverAuth'

const KEY_PURPOSE_OIDS: Record<ExtendedKeyUsageName, string> = {
  clientAuth: id_kp_clientAuth,
  serverAuth: id_kp_serverAuth,
}

const der = (value: object): Uint8Array => new Uint8Array(AsnConvert.serialize(value))

/** basicConstraints CA:TRUE without a path length (critical). */
export function caBasicConstraints(): CertificateExtension {
  return { oid: id_ce_basicConstraints, critical: true, value: der(new BasicConstraints({ cA: true })) }
}

/** keyUsage (critical). */
export function keyUsage(usages: readonly KeyUsageName[]): CertificateExtension {
  const flags = usages.reduce((all, usage) => all | KeyUsageFlags[usage], 0)
  return { oid: id_ce_keyUsage, critical: true, value: der(new KeyUsage(flags)) }
}

/** extKeyUsage (not critical). */
export function extendedKeyUsage(purposes: readonly ExtendedKeyUsageName[]): CertificateExtension {
  const oids = purposes.map((p) => KEY_PURPOSE_OIDS[p])
  return { oid: id_ce_extKeyUsage, critical: false, value: der(new ExtendedKeyUsage(oids)) }
}

// GeneralName's [2] dNSName (IA5String) and [7] iPAddress (OCTET STRING), IMPLICIT: context, primitive
const DNS_NAME = 0x82
const IP_ADDRESS = 0x87

/**
 * subjectAltName with DNS names first, then IPv4/IPv6 addresses (not critical). Framed directly
 * (asn1-x509 parses each address): the join service signs one per join, and asn1-schema's encoder
 * walked the schema for ~60 µs each. test/x509/extensions.test.ts holds it to asn1-schema's output.
 */
export function subjectAltName(names: {
  dns?: readonly string[]
  ips?: readonly string[]
}): CertificateExtension {
  const dns = (names.dns ?? []).map((name) => {
    if (![...name].every((c) => c.charCodeAt(0) < 0x80))
      throw new Error(`subjectAltName: DNS name ${JSON.stringify(name)} is not ASCII (IA5String)`)
    return derElement(DNS_NAME, Buffer.from(name, 'latin1'))
  })
  const ips = (names.ips ?? []).map((ip) =>
    derElement(IP_ADDRESS, Buffer.from((AsnIpConverter.toASN(ip) as OctetString).valueBlock.valueHexView)),
  )
  return { oid: id_ce_subjectAltName, critical: false, value: derElement(0x30, ...dns, ...ips) }
}

/** subjectKeyIdentifier: SHA-1 of the subjectPublicKey BIT STRING, RFC 5280 §4.2.1.2 method (1) (not critical). */
export function subjectKeyIdentifier(publicKey: KeyObject): CertificateExtension {
  const spki = AsnConvert.parse(publicKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo)
  const id = createHash('sha1').update(new Uint8Array(spki.subjectPublicKey)).digest()
  return { oid: id_ce_subjectKeyIdentifier, critical: false, value: der(new SubjectKeyIdentifier(id)) }
}
