/**
 * JSON Schemas of the CAPI v1beta1 objects we read, with the CRD limits of capi.md §1.1. They check
 * the internal shape: convert.ts has turned other apiVersions into it first.
 */
import type { JsonSchema } from '../yaml/index.js'

const str = (min: number, max: number) => ({ type: 'string', minLength: min, maxLength: max })
const strList = (maxItems: number, min: number, max: number) => ({
  type: 'array',
  maxItems,
  items: str(min, max),
})
const secretRef = {
  type: 'object',
  additionalProperties: false,
  required: ['secret'],
  properties: {
    secret: {
      type: 'object',
      additionalProperties: false,
      properties: { name: { type: 'string', maxLength: 253 }, key: { type: 'string', maxLength: 256 } },
    },
  },
}
const kubeadmObject = { type: 'object' }
const metadata = {
  type: 'object',
  required: ['name'],
  properties: {
    name: str(1, 253),
    namespace: { type: 'string' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    annotations: { type: 'object', additionalProperties: { type: 'string' } },
  },
}

const file = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: {
    path: str(1, 512),
    owner: str(1, 256),
    permissions: { ...str(1, 16), pattern: '^0?[0-7]{3,4}$' },
    encoding: { enum: ['base64', 'gzip', 'gzip+base64'] },
    append: { type: 'boolean' },
    content: str(1, 10240),
    contentFrom: secretRef,
  },
}

const user = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: str(1, 256),
    gecos: str(1, 256),
    groups: str(1, 256),
    homeDir: str(1, 256),
    inactive: { type: 'boolean' },
    shell: str(1, 256),
    passwd: str(1, 256),
    passwdFrom: secretRef,
    primaryGroup: str(1, 256),
    lockPassword: { type: 'boolean' },
    sudo: str(1, 256),
    sshAuthorizedKeys: strList(100, 1, 2048),
  },
}

export const kubeadmConfigSpecSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    clusterConfiguration: kubeadmObject,
    initConfiguration: kubeadmObject,
    joinConfiguration: kubeadmObject,
    files: { type: 'array', maxItems: 200, items: file },
    diskSetup: {
      type: 'object',
      additionalProperties: false,
      properties: {
        partitions: {
          type: 'array',
          maxItems: 100,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['device', 'layout'],
            properties: {
              device: str(1, 256),
              layout: { type: 'boolean' },
              overwrite: { type: 'boolean' },
              tableType: { enum: ['mbr', 'gpt'] },
            },
          },
        },
        filesystems: {
          type: 'array',
          maxItems: 100,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['device', 'filesystem'],
            properties: {
              device: str(1, 256),
              filesystem: str(1, 128),
              label: str(1, 512),
              partition: str(1, 128),
              overwrite: { type: 'boolean' },
              replaceFS: str(1, 128),
              extraOpts: strList(100, 1, 256),
            },
          },
        },
      },
    },
    mounts: { type: 'array', maxItems: 100, items: { ...strList(6, 1, 512), minItems: 1 } },
    bootCommands: strList(1000, 1, 10240),
    preKubeadmCommands: strList(1000, 1, 10240),
    postKubeadmCommands: strList(1000, 1, 10240),
    users: { type: 'array', maxItems: 100, items: user },
    ntp: {
      type: 'object',
      additionalProperties: false,
      properties: { servers: strList(100, 1, 512), enabled: { type: 'boolean' } },
    },
    format: { enum: ['cloud-config', 'ignition'] },
    verbosity: { type: 'integer', minimum: 0 },
    useExperimentalRetryJoin: { type: 'boolean' },
    ignition: {
      type: 'object',
      additionalProperties: false,
      properties: {
        containerLinuxConfig: {
          type: 'object',
          additionalProperties: false,
          properties: { additionalConfig: str(1, 32768), strict: { type: 'boolean' } },
        },
      },
    },
  },
}

/** KubeadmConfig(Template) at the top level; the spec has its own schema, checked at its own prefix. */
export const hasMetadataSchema: JsonSchema = { type: 'object', required: ['metadata'] }

export const clusterSchema: JsonSchema = {
  type: 'object',
  required: ['metadata'],
  properties: {
    metadata,
    spec: {
      type: 'object',
      properties: {
        controlPlaneEndpoint: {
          type: 'object',
          properties: { host: { type: 'string' }, port: { type: 'integer', minimum: 0, maximum: 65535 } },
        },
        clusterNetwork: {
          type: 'object',
          properties: {
            serviceDomain: { type: 'string' },
            services: {
              type: 'object',
              properties: { cidrBlocks: { type: 'array', items: { type: 'string' } } },
            },
            pods: {
              type: 'object',
              properties: { cidrBlocks: { type: 'array', items: { type: 'string' } } },
            },
          },
        },
      },
    },
    status: {
      type: 'object',
      properties: {
        infrastructureReady: { type: 'boolean' },
        conditions: {
          type: 'array',
          items: {
            type: 'object',
            required: ['type', 'status'],
            properties: {
              type: { type: 'string' },
              status: { enum: ['True', 'False', 'Unknown'] },
              reason: { type: 'string' },
              message: { type: 'string' },
            },
          },
        },
      },
    },
  },
}

export const machineSchema: JsonSchema = {
  type: 'object',
  required: ['metadata', 'spec'],
  properties: {
    metadata,
    spec: {
      type: 'object',
      required: ['clusterName'],
      properties: {
        clusterName: str(1, 253),
        version: { type: 'string' },
        bootstrap: {
          type: 'object',
          properties: {
            configRef: {
              type: 'object',
              required: ['name'],
              properties: {
                kind: { enum: ['KubeadmConfig', 'KubeadmConfigTemplate'] },
                name: { type: 'string' },
              },
            },
          },
        },
      },
    },
    status: {
      type: 'object',
      properties: {
        addresses: {
          type: 'array',
          items: {
            type: 'object',
            required: ['type', 'address'],
            properties: { type: { type: 'string' }, address: { type: 'string' } },
          },
        },
      },
    },
  },
}

export const secretSchema: JsonSchema = {
  type: 'object',
  required: ['metadata'],
  properties: {
    metadata,
    data: { type: 'object', additionalProperties: { type: 'string' } },
    stringData: { type: 'object', additionalProperties: { type: 'string' } },
  },
}
