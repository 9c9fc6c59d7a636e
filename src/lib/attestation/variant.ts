/** Attestation variants and the OIDs under which aTLS certificates carry their documents. */
export const VARIANT_OIDS = { 'qemu-vtpm': '1.3.9900.5.1' } as const
export type Variant = keyof typeof VARIANT_OIDS
export const isVariant = (v: unknown): v is Variant => typeof v === 'string' && Object.hasOwn(VARIANT_OIDS, v)
