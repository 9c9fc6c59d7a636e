import { expect } from '../support/chai.js'
import { renderGenerateResult } from '../../src/lib/bootstrapdata/render.js'
import type { GenerateResult } from '../../src/lib/bootstrapdata/index.js'

const base: GenerateResult = { machines: [], waiting: [], caFilesCreated: [] }
const cp0 = {
  machine: 'cp-0',
  role: 'init' as const,
  format: 'cloud-config' as const,
  file: 'out/cp-0.yaml',
  bytes: 2048,
}

describe('bootstrap-data: rendering a run', () => {
  const cases: Array<[string, GenerateResult, string[]]> = [
    ['one machine', { ...base, machines: [cp0] }, ['cp-0 (init, cloud-config): out/cp-0.yaml, 2048 bytes']],
    [
      'an offloaded machine names the object, the stub size, the access and what to delete',
      {
        ...base,
        machines: [
          {
            ...cp0,
            offload: {
              object: 's3://b/cp-0',
              stubBytes: 310,
              access: 'instance-role',
              deleteAfterRead: 's3://b/cp-0',
            },
          },
        ],
      },
      [
        'cp-0 (init, cloud-config): out/cp-0.yaml, 2048 bytes → offloaded to s3://b/cp-0',
        '  stub 310 bytes; the node fetches it with its instance role',
        '  delete s3://b/cp-0 once the node has read it (CAPA: when the Machine has a nodeRef; fallback: a bucket lifecycle rule)',
      ],
    ],
    [
      'a presigned offload says who can fetch it until when',
      {
        ...base,
        machines: [
          {
            ...cp0,
            offload: {
              object: 's3://b/cp-0',
              stubBytes: 900,
              access: 'presigned-url',
              urlExpires: '2026-01-02T03:14:05.000Z',
              deleteAfterRead: 's3://b/cp-0',
            },
          },
        ],
      },
      [
        'cp-0 (init, cloud-config): out/cp-0.yaml, 2048 bytes → offloaded to s3://b/cp-0',
        '  stub 900 bytes; presigned URL, valid until 2026-01-02T03:14:05.000Z: anyone who can read the user data can fetch it until then',
        '  delete s3://b/cp-0 once the node has read it (CAPA: when the Machine has a nodeRef; fallback: a bucket lifecycle rule)',
      ],
    ],
    [
      'waiting machines, new CAs and the admin kubeconfig',
      {
        ...base,
        machines: [cp0],
        waiting: [{ machine: 'w-0', reason: 'the control plane is not up' }],
        caDir: 'pki',
        caFilesCreated: ['pki/ca.crt'],
        adminKubeconfig: 'out/admin.conf',
      },
      [
        'cp-0 (init, cloud-config): out/cp-0.yaml, 2048 bytes',
        'w-0: waiting, the control plane is not up',
        'Generated the cluster CAs in pki',
        'Admin kubeconfig: out/admin.conf',
      ],
    ],
    [
      'CA Secrets created in a management cluster',
      { ...base, caSecrets: { namespace: 'ns', cluster: 'demo', created: ['ns/demo-ca'] } },
      ['Generated the cluster CAs as Secrets ns/demo-ca, -etcd, -proxy, -sa in the management cluster'],
    ],
    [
      'CA Secrets already there',
      { ...base, caSecrets: { namespace: 'ns', cluster: 'demo', created: [] } },
      ['Using the cluster CAs of Secrets ns/demo-ca, -etcd, -proxy, -sa in the management cluster'],
    ],
    [
      'a token Secret written to a file says to apply it',
      {
        ...base,
        tokenSecret: { name: 'bootstrap-token-abcdef', expires: 'T', registered: false, file: 'tok.yaml' },
      },
      [
        'Bootstrap token Secret kube-system/bootstrap-token-abcdef (expires T) written to tok.yaml; apply it to the workload cluster',
      ],
    ],
    [
      'a registered token Secret says so',
      { ...base, tokenSecret: { name: 'bootstrap-token-abcdef', expires: 'T', registered: true } },
      [
        'Bootstrap token Secret kube-system/bootstrap-token-abcdef (expires T) registered in the workload cluster',
      ],
    ],
  ]
  for (const [name, result, lines] of cases)
    it(name, () => expect(renderGenerateResult(result).split('\n')).to.deep.equal(lines))
})
