/** The attestation variants this tool knows, and the OIDs under which aTLS certificates carry their documents. */
export const ATTESTATION_VARIANTS = ['qemu-vtpm', 'tpm-ek'] as const
export type AttestationVariant = (typeof ATTESTATION_VARIANTS)[number]
export const isAttestationVariant = (v: unknown): v is AttestationVariant =>
  typeof v === 'string' && (ATTESTATION_VARIANTS as readonly string[]).includes(v)

/**
 * qemu-vtpm is Constellation's; tpm-ek is this project's own (no Constellation counterpart), on the
 * same arc with room left for further Constellation variants below it.
 */
export const VARIANT_OIDS: Readonly<Record<AttestationVariant, string>> = {
  'qemu-vtpm': '1.3.9900.5.1',
  'tpm-ek': '1.3.9900.5.100',
}
