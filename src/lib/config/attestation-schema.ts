/**
 * JSON Schema pieces of the attestation sections, shared by the operator's config and the node
 * config (which carries the same CVM sections without measurements, for the join service).
 */

/** Hex of exactly `bytes` bytes, or of any whole number of bytes. */
export const hex = (bytes?: number) => ({
  type: 'string',
  pattern: bytes ? `^[0-9a-fA-F]{${bytes * 2}}$` : '^([0-9a-fA-F]{2})*$',
})

const hexField = (bytes: number, description: string) => ({
  ...hex(bytes),
  description: `${description}: ${bytes} bytes as hex (${bytes * 2} digits)`,
})

/** A minimum version that the hardware reports in `bits` bits. */
const version = (bits: 8 | 16, description: string) => ({
  type: 'integer',
  minimum: 0,
  maximum: 2 ** bits - 1,
  description: `${description} (0-${2 ** bits - 1})`,
})

const measurement = {
  type: 'object',
  additionalProperties: false,
  required: ['expected'],
  properties: {
    expected: { ...hex(32), description: 'Expected PCR value, 32 bytes as hex' },
    warnOnly: { type: 'boolean', default: false, description: 'Warn instead of refusing on mismatch' },
  },
}

export const measurementsSchema = {
  type: 'object',
  propertyNames: { pattern: '^([0-9]|1[0-9]|2[0-3])$' },
  // An empty set would trust any node: refuse it here, and the validator refuses it too.
  minProperties: 1,
  additionalProperties: measurement,
  description: 'PCR index (0-23) to expected value',
}

/** How a certificate or directory is named: the operator's config allows paths relative to itself. */
export interface CvmSchemaOptions {
  /** The operator's config: every section has measurements. The node config takes them from the join-config. */
  measurements: boolean
  /** Pattern a path must match (the node config: absolute); PEM text is always allowed. */
  pathPattern?: string
  /** How paths are read, for the descriptions. */
  pathNote: string
}

function certificate(what: string, opts: CvmSchemaOptions) {
  const pem = '-----BEGIN'
  return {
    type: 'string',
    minLength: 1,
    ...(opts.pathPattern && { pattern: `(${opts.pathPattern})|${pem}` }),
    description: `${what}: PEM text, or ${opts.pathNote} of a PEM or DER file`,
  }
}

const withMeasurements = (opts: CvmSchemaOptions, required: string[]) =>
  opts.measurements ? ['measurements', ...required] : required

/** An SEV-SNP variant's section; `cloud` names where its reports come from. */
export function snpSectionSchema(cloud: string, opts: CvmSchemaOptions) {
  return {
    type: 'object',
    additionalProperties: false,
    required: withMeasurements(opts, [
      'bootloaderVersion',
      'teeVersion',
      'snpVersion',
      'microcodeVersion',
      'amdRootKey',
    ]),
    description: `${cloud} SEV-SNP: the node's vTPM runs in an AMD SEV-SNP guest whose report chains to amdRootKey`,
    properties: {
      ...(opts.measurements && { measurements: measurementsSchema }),
      bootloaderVersion: version(8, 'Lowest acceptable bootloader SVN of the reported and launch TCB'),
      teeVersion: version(8, 'Lowest acceptable TEE (PSP OS) SVN of the reported and launch TCB'),
      snpVersion: version(8, 'Lowest acceptable SEV-SNP firmware SVN of the reported and launch TCB'),
      microcodeVersion: version(8, 'Lowest acceptable microcode SVN of the reported and launch TCB'),
      launchMeasurement: hexField(
        48,
        'Expected launch MEASUREMENT of the guest (firmware, and what the VMM loaded with it); absent: not checked, and validators warn',
      ),
      amdRootKey: certificate(
        "AMD root key(s) (ARK) the VCEK/VLEK chain must end in; may hold several products' ARKs",
        opts,
      ),
      amdSigningKey: certificate(
        'Optional pin of the AMD signing key (ASK, or ASVK for a VLEK) that signs the VCEK/VLEK',
        opts,
      ),
      allowMigrationAgent: {
        type: 'boolean',
        default: false,
        description: 'Accept a guest policy that allows a migration agent (MIGRATE_MA)',
      },
      allowSMT: {
        type: 'boolean',
        default: false,
        description:
          'Accept a guest policy that allows simultaneous multithreading (SMT); debug is always refused',
      },
    },
  }
}

/** A TDX variant's section; `platform` names where its quotes come from. */
export function tdxSectionSchema(platform: string, opts: CvmSchemaOptions) {
  return {
    type: 'object',
    additionalProperties: false,
    required: withMeasurements(opts, ['qeSVN', 'pceSVN', 'teeTCBSVN', 'intelRootKey']),
    description: `${platform} TDX: the node's vTPM answers for an Intel TDX trust domain whose quote chains to intelRootKey`,
    properties: {
      ...(opts.measurements && { measurements: measurementsSchema }),
      qeSVN: version(16, 'Lowest acceptable quoting enclave SVN'),
      pceSVN: version(16, 'Lowest acceptable provisioning certification enclave SVN'),
      teeTCBSVN: hexField(16, 'Lowest acceptable TEE_TCB_SVN, compared component by component'),
      qeVendorID: hexField(16, 'Expected QE_VENDOR_ID of the quoting enclave; absent: not checked'),
      mrSeam: hexField(48, 'Expected MRSEAM (the TDX module); absent: not checked'),
      xfam: hexField(8, 'Expected XFAM (extended features available mask); absent: not checked'),
      tdAttributes: hexField(8, 'Expected TD attributes; absent: not checked (debug is always refused)'),
      mrTd: hexField(48, 'Expected MRTD (the initial TD image, i.e. its firmware); absent: not checked'),
      rtmrs: {
        type: 'object',
        propertyNames: { pattern: '^[0-3]$' },
        additionalProperties: hexField(48, 'Expected RTMR value'),
        description: 'RTMR index (0-3) to expected value; RTMRs not listed are not checked',
      },
      intelRootKey: certificate("Intel's SGX root CA the quote's PCK chain must end in", opts),
      collateral: {
        type: 'string',
        minLength: 1,
        ...(opts.pathPattern && { pattern: opts.pathPattern }),
        description: `Directory (${opts.pathNote}) holding Intel PCS collateral (TCB info and QE identity with their issuer chains); absent: the TCB status is not checked`,
      },
    },
  }
}

/** The five CVM sections under their config keys. */
export function cvmSectionSchemas(opts: CvmSchemaOptions) {
  return {
    awsSEVSNP: snpSectionSchema('AWS', opts),
    gcpSEVSNP: snpSectionSchema('GCP', opts),
    azureSEVSNP: snpSectionSchema('Azure', opts),
    qemuTDX: tdxSectionSchema('QEMU', opts),
    azureTDX: tdxSectionSchema('Azure', opts),
  }
}

const HEX_PATTERN_PROBLEM = /^must match pattern "\^\[0-9a-fA-F\]\{(\d+)\}\$"$/

/** Says a hex length problem in bytes, as the descriptions do, rather than as a regular expression. */
export function explainHexProblem<P extends { message: string }>(problem: P): P {
  const digits = HEX_PATTERN_PROBLEM.exec(problem.message)?.[1]
  if (digits === undefined) return problem
  const bytes = Number(digits) / 2
  return { ...problem, message: `must be ${bytes} bytes as hex (${digits} hex digits)` }
}
