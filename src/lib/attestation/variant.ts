/** The attestation variants this tool knows, the OIDs aTLS certificates carry their documents under, and what each proves. */
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

/** What a passed attestation of a variant proves, and what it leaves open. */
export interface AttestationAssurance {
  variant: AttestationVariant
  /** Whether the key that quoted is tied to a root the operator pinned (not taken as presented). */
  anchored: boolean
  proves: string
  doesNotProve: string
}

/**
 * The one statement of each variant, which `verify`, `status` and `recover` show (text and --json)
 * and the README's Security section quotes word for word (a test holds them together).
 */
const ASSURANCES: Readonly<Record<AttestationVariant, Omit<AttestationAssurance, 'variant'>>> = {
  'qemu-vtpm': {
    anchored: false,
    proves:
      'the quoted PCR values for this nonce and TLS key, with the attestation key taken as the node presents it',
    doesNotProve:
      'that a TPM, let alone real hardware, holds that key: any TPM or program with a key of its own passes (for development only)',
  },
  'tpm-ek': {
    anchored: true,
    proves:
      'that a TPM certified by a manufacturer root the operator pinned holds the key that quoted the PCR values: its EK certificate chains to attestation.tpmEK.roots, and it activated a credential for that key',
    doesNotProve:
      "that the VM's memory is encrypted, nor which machine the TPM sits in; it rests on the pinned roots alone (mini pins the cluster's own local CA)",
  },
}

export function attestationAssurance(variant: AttestationVariant): AttestationAssurance {
  return { variant, ...ASSURANCES[variant] }
}

/** One line for people: "qemu-vtpm is NOT anchored: it proves …. It does not prove …." */
export function describeAssurance(a: AttestationAssurance): string {
  return `${a.variant} is ${a.anchored ? 'anchored' : 'NOT anchored'}: it proves ${a.proves}. It does not prove ${a.doesNotProve}.`
}
