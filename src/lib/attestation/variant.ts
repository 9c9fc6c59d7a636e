/** The attestation variants this tool knows, and the OIDs under which aTLS certificates carry their documents. */
export const ATTESTATION_VARIANTS = ['qemu-vtpm'] as const
export type AttestationVariant = (typeof ATTESTATION_VARIANTS)[number]
export const isAttestationVariant = (v: unknown): v is AttestationVariant =>
  typeof v === 'string' && (ATTESTATION_VARIANTS as readonly string[]).includes(v)

export const VARIANT_OIDS: Readonly<Record<AttestationVariant, string>> = { 'qemu-vtpm': '1.3.9900.5.1' }
