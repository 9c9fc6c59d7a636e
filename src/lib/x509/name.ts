/** Distinguished names for the subjects and issuers we write. */
import { AttributeTypeAndValue, AttributeValue, Name, RelativeDistinguishedName } from '@peculiar/asn1-x509'

/** X.520 attribute types used in our subjects. */
const ATTRIBUTE_OIDS = { CN: '2.5.4.3', O: '2.5.4.10' } as const
export type NameAttribute = [type: keyof typeof ATTRIBUTE_OIDS, value: string]

/** A Name with one RDN per attribute, values as UTF8String (RFC 5280 §4.1.2.6). */
export function distinguishedName(attributes: readonly NameAttribute[]): Name {
  return new Name(
    attributes.map(
      ([type, value]) =>
        new RelativeDistinguishedName([
          new AttributeTypeAndValue({
            type: ATTRIBUTE_OIDS[type],
            value: new AttributeValue({ utf8String: value }),
          }),
        ]),
    ),
  )
}
