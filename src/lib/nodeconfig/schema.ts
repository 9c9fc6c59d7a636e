/** JSON Schema of the node config read by `bootstrap run` and `verifyservice`. */
import { ATTESTATION_VARIANTS } from '../attestation/index.js'
import { cvmSectionSchemas } from '../config/index.js'

const hostPort = { type: 'string', description: 'HOST:PORT' }
/** A service's section: only its listen address. */
const listenAt = (description?: string) =>
  ({
    type: 'object',
    additionalProperties: false,
    properties: { listen: description ? { ...hostPort, description } : hostPort },
  }) as const

const member = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'role', 'vpcIP'],
  properties: {
    name: { type: 'string', minLength: 1 },
    role: { enum: ['control-plane', 'worker'] },
    vpcIP: { type: 'string', description: 'IP address in the cluster network' },
  },
}

export const nodeConfigSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'constellation node config',
  type: 'object',
  additionalProperties: false,
  required: ['attestationVariant', 'tpm'],
  properties: {
    attestationVariant: { enum: [...ATTESTATION_VARIANTS] },
    attestation: {
      type: 'object',
      additionalProperties: false,
      description:
        "settings of the node's attestation variant, for the validators it runs (the join service)",
      properties: {
        tpmEK: {
          type: 'object',
          additionalProperties: false,
          required: ['roots'],
          properties: {
            roots: {
              type: 'array',
              minItems: 1,
              maxItems: 64,
              items: { type: 'string', pattern: '^/' },
              description:
                "files (PEM or DER) of the TPM manufacturers' CA certificates joining nodes' EK certificates must chain to",
            },
          },
        },
        // the operator's sections without measurements (the join-config has them); files are absolute
        ...cvmSectionSchemas({ measurements: false, pathPattern: '^/', pathNote: 'an absolute path' }),
      },
    },
    tpm: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      maxProperties: 1,
      properties: {
        device: { type: 'string', pattern: '^/', description: 'TPM device, e.g. /dev/tpmrm0' },
        swtpm: {
          type: 'string',
          description:
            "swtpm's command channel: its TCP server port as HOST:PORT, or its unix socket as unix:/path",
        },
      },
    },
    root: { type: 'string', pattern: '^/', description: 'prefix of every node path (default /)' },
    initServer: listenAt(),
    verifyService: listenAt(),
    joinService: listenAt(
      "the join service's HOST:PORT (default 0.0.0.0:30090); joining nodes dial its port on the control planes",
    ),
    keyService: listenAt(
      "the key service's HOST:PORT (default 127.0.0.1:9000), or unix:/path for a socket only its user can connect to (created 0600, its folder 0700); it authenticates no caller, so keep it on loopback where the host is the node alone",
    ),
    recoveryServer: listenAt(
      'where a rebooted node that waits for its disk key serves `constellation recover` (default 0.0.0.0:9999)',
    ),
    kubeconfig: {
      type: 'string',
      pattern: '^/',
      description:
        'kubeconfig the join service reaches the Kubernetes API with (default <root>/etc/kubernetes/admin.conf, which kubeadm writes on control planes)',
    },
    initSecretHash: {
      type: 'string',
      pattern: '^\\$2[aby]\\$\\d{2}\\$[./A-Za-z0-9]{53}$',
      description: 'bcrypt hash of the init secret',
    },
    kubeadm: {
      type: 'string',
      pattern: '^/',
      description: 'kubeadm binary (default <root>/run/state/bin/kubeadm)',
    },
    stateDisk: {
      type: 'object',
      additionalProperties: false,
      required: ['device'],
      properties: {
        device: {
          type: 'string',
          pattern: '^/',
          description:
            'LUKS2 state disk (block device or image file); `state-disk setup` formats it with a random key on first boot',
        },
        pbkdf: {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'iterations'],
          description:
            "cost of the new keyslot (tests: pbkdf2 with few iterations); default: cryptsetup's argon2id",
          properties: {
            type: { enum: ['pbkdf2', 'argon2id'] },
            iterations: { type: 'integer', minimum: 1000 },
          },
        },
      },
    },
    metadata: {
      type: 'object',
      additionalProperties: false,
      required: ['provider'],
      description:
        "static: this node, its peers and the endpoint are given here; http: fetched at start from a metadata service (the shape of Constellation's QEMU metadata API: GET url/self, /peers, /endpoint, /initsecrethash)",
      properties: {
        provider: { enum: ['static', 'http'] },
        url: { type: 'string', description: 'http: the metadata service, e.g. http://10.42.0.1:8080' },
        sourceAddress: {
          type: 'string',
          description:
            'http: the address requests leave from, when the host has several (the service tells nodes apart by it)',
        },
        self: member,
        peers: { type: 'array', items: member },
        loadBalancerEndpoint: hostPort,
      },
    },
  },
} as const
