/** JSON Schemas for config and state; exported by `constellation config schema` for editors. */
import { cvmSectionSchemas, hex, measurementsSchema as measurements } from './attestation-schema.js'
import { CONFIG_VERSION, STATE_VERSION } from './types.js'

export const configSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://constellation.invalid/schemas/constellation-conf.json',
  title: 'constellation-conf.yaml',
  type: 'object',
  additionalProperties: false,
  required: ['version', 'name', 'kubernetesVersion', 'attestation'],
  properties: {
    version: { const: CONFIG_VERSION, description: `Config schema version, must be ${CONFIG_VERSION}` },
    name: {
      type: 'string',
      pattern: '^[a-z0-9]([-a-z0-9]{0,35}[a-z0-9])?$',
      description: 'Cluster name: lower-case letters, digits and dashes, at most 37 characters',
    },
    kubernetesVersion: { type: 'string', description: 'Full Kubernetes version, e.g. v1.31.13' },
    serviceCIDR: { type: 'string', description: 'Service CIDR, used at first init', default: '10.96.0.0/12' },
    attestation: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      maxProperties: 1,
      properties: {
        qemuVTPM: {
          type: 'object',
          additionalProperties: false,
          required: ['measurements'],
          description: "Constellation's qemu-vtpm: the AK is trusted as presented (local and test clusters)",
          properties: { measurements },
        },
        tpmEK: {
          type: 'object',
          additionalProperties: false,
          required: ['measurements', 'roots'],
          description:
            "tpm-ek: the node's EK certificate must chain to a manufacturer root, and its AK must activate a credential",
          properties: {
            measurements,
            roots: {
              type: 'array',
              maxItems: 64,
              items: { type: 'string', minLength: 1 },
              description:
                'TPM manufacturer CA certificates: PEM text, or paths (relative to this file) of PEM or DER files',
            },
          },
        },
        ...cvmSectionSchemas({ measurements: true, pathNote: 'a path (relative to this file)' }),
      },
    },
    measurementsPublicKey: {
      type: 'string',
      minLength: 1,
      description:
        "The image builder's ECDSA P-256 public key (PEM text, or a path relative to this file) that `config fetch-measurements` verifies signed measurements with",
    },
    kubernetesComponents: {
      type: 'array',
      description: 'Replaces the pinned components (for mirrors)',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['url', 'installPath'],
        properties: {
          url: { type: 'string', pattern: '^(https?|data):' },
          hash: { type: 'string', pattern: '^(sha256:[0-9a-f]{64})?$' },
          installPath: { type: 'string', pattern: '^/' },
          extract: { type: 'boolean' },
        },
      },
    },
    upgrade: {
      type: 'object',
      additionalProperties: false,
      properties: {
        charts: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'chart', 'version', 'namespace'],
            properties: {
              name: { type: 'string', minLength: 1 },
              chart: { type: 'string', minLength: 1 },
              repository: { type: 'string' },
              version: { type: 'string', minLength: 1 },
              namespace: { type: 'string', minLength: 1 },
              valuesFile: { type: 'string' },
            },
          },
        },
      },
    },
  },
} as const

export const stateSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'constellation-state.yaml',
  type: 'object',
  additionalProperties: false,
  required: ['version', 'infrastructure', 'clusterValues'],
  properties: {
    version: { const: STATE_VERSION },
    infrastructure: {
      type: 'object',
      additionalProperties: false,
      required: ['clusterEndpoint', 'initSecret', 'name'],
      properties: {
        uid: { type: 'string' },
        clusterEndpoint: { type: 'string' },
        inClusterEndpoint: { type: 'string' },
        initSecret: hex(),
        apiServerCertSANs: { type: 'array', items: { type: 'string' } },
        name: { type: 'string' },
        ipCidrNode: { type: 'string' },
      },
    },
    clusterValues: {
      type: 'object',
      additionalProperties: false,
      properties: {
        clusterID: { anyOf: [{ const: '' }, hex(32)] },
        ownerID: { type: 'string' },
        measurementSalt: { anyOf: [{ const: '' }, hex(32)] },
      },
    },
  },
} as const
