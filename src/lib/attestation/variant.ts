/** The attestation variants this tool knows, the OIDs aTLS certificates carry their documents under, and what each proves. */
export const ATTESTATION_VARIANTS = [
  'qemu-vtpm',
  'tpm-ek',
  'aws-sev-snp',
  'gcp-sev-snp',
  'azure-sev-snp',
  'qemu-tdx',
  'azure-tdx',
] as const
export type AttestationVariant = (typeof ATTESTATION_VARIANTS)[number]
export const isAttestationVariant = (v: unknown): v is AttestationVariant =>
  typeof v === 'string' && (ATTESTATION_VARIANTS as readonly string[]).includes(v)

/** The confidential-VM variants: a vTPM quote bound to the CVM's hardware report. */
export const CVM_VARIANTS = ['aws-sev-snp', 'gcp-sev-snp', 'azure-sev-snp', 'qemu-tdx', 'azure-tdx'] as const
export type CvmVariant = (typeof CVM_VARIANTS)[number]
export const isCvmVariant = (v: AttestationVariant): v is CvmVariant =>
  (CVM_VARIANTS as readonly string[]).includes(v)

/**
 * Constellation's OIDs (1.3.9900.2 AWS, .3 GCP, .4 Azure, .5 QEMU); tpm-ek is this project's own
 * (no Constellation counterpart), on the QEMU arc with room left below it.
 */
export const VARIANT_OIDS: Readonly<Record<AttestationVariant, string>> = {
  'qemu-vtpm': '1.3.9900.5.1',
  'tpm-ek': '1.3.9900.5.100',
  'aws-sev-snp': '1.3.9900.2.2',
  'gcp-sev-snp': '1.3.9900.3.2',
  'azure-sev-snp': '1.3.9900.4.1',
  'qemu-tdx': '1.3.9900.5.99',
  'azure-tdx': '1.3.9900.4.3',
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
  'aws-sev-snp': snp(
    "the VLEK (AWS's per-cloud key)",
    'its REPORT_DATA is the SHA-512 of the attestation key',
  ),
  'gcp-sev-snp': snp(
    'the VCEK',
    'its REPORT_DATA is the SHA-512 of the attestation key with the TLS key and nonce',
  ),
  'azure-sev-snp': snp(
    "the VCEK, read through Azure's HCL report in the vTPM",
    'its REPORT_DATA is the SHA-256 of the HCL runtime data, which names the attestation key',
  ),
  'qemu-tdx': tdx(
    'its REPORT_DATA is the SHA-512 of the attestation key with the TLS key and nonce',
    "; and QEMU's vTPM runs on the host, so its PCR values are the host's word (the RTMRs are the trust domain's own)",
  ),
  'azure-tdx': tdx(
    "its REPORT_DATA is the SHA-256 of Azure's HCL runtime data, which names the attestation key",
  ),
}

function snp(signer: string, binding: string): Omit<AttestationAssurance, 'variant'> {
  return {
    anchored: true,
    proves: `that the node is an AMD SEV-SNP guest whose memory the host cannot read: its report is signed by ${signer}, chained to the AMD root key pinned in the config, with the launch measurement, guest policy (no debug) and TCB the config requires; ${binding}, so the vTPM that quoted the PCR values runs inside that guest`,
    doesNotProve:
      "what ran after launch beyond the PCR values the vTPM quoted, nor that the pinned root is AMD's (a stand-in root proves nothing about hardware)",
  }
}

function tdx(binding: string, caveat = ''): Omit<AttestationAssurance, 'variant'> {
  return {
    anchored: true,
    proves: `that the node is an Intel TDX trust domain whose memory the host cannot read: its quote is signed by a quoting enclave certified by a PCK certificate chained to the Intel SGX root pinned in the config, with the MRTD, RTMRs, MRSEAM, XFAM and TD attributes (no debug) the config requires; ${binding}, so the vTPM that quoted the PCR values answers for that trust domain`,
    doesNotProve: `that the platform's TCB is up to date unless TCB collateral was given, nor that the pinned root is Intel's (a stand-in root proves nothing about hardware)${caveat}`,
  }
}

export function attestationAssurance(variant: AttestationVariant): AttestationAssurance {
  return { variant, ...ASSURANCES[variant] }
}

/** One line for people: "qemu-vtpm is NOT anchored: it proves …. It does not prove …." */
export function describeAssurance(a: AttestationAssurance): string {
  return `${a.variant} is ${a.anchored ? 'anchored' : 'NOT anchored'}: it proves ${a.proves}. It does not prove ${a.doesNotProve}.`
}

/**
 * Whose root the hardware evidence chained to, said beside every verdict: a stand-in root (the local
 * cluster's, or any the operator pinned in place of the vendor's) proves nothing about hardware.
 */
export function describeHardware(h: {
  kind: 'snp' | 'tdx'
  vendorRoot: boolean
  rootSubject: string
}): string {
  const what = h.kind === 'snp' ? 'SEV-SNP report' : 'TDX quote'
  const vendor = h.kind === 'snp' ? "AMD's" : "Intel's"
  return h.vendorRoot
    ? `Hardware: the ${what} chains to ${vendor} published root (${h.rootSubject}).`
    : `Hardware: the ${what} chains to a STAND-IN root, not ${vendor} (${h.rootSubject}): it proves the checks ran, nothing about hardware.`
}
