import { expect } from '../support/chai.js'
import { formatPath, YamlProblemsError, type Located } from '../../src/lib/yaml/index.js'
import { parseBootstrapObjects } from '../../src/lib/bootstrapdata/parse.js'
import { goDuration } from '../../src/lib/bootstrapdata/convert-spec.js'
import { supportedVersions } from '../../src/lib/versions/index.js'

const CLUSTER = (apiVersion: string, status = '') => `apiVersion: ${apiVersion}
kind: Cluster
metadata: { name: demo }
spec: { controlPlaneEndpoint: { host: 10.0.0.1, port: 6443 } }
${status}`

const MACHINE = (
  apiVersion: string,
  spec = 'clusterName: demo',
  labels = '{ cluster.x-k8s.io/control-plane: "" }',
) => `apiVersion: ${apiVersion}
kind: Machine
metadata: { name: m0, labels: ${labels} }
spec:
  ${spec}
  version: v1.31.13
  bootstrap: { configRef: { kind: KubeadmConfig, name: cfg } }`

const CONFIG = (apiVersion: string, spec: string) => `apiVersion: ${apiVersion}
kind: KubeadmConfig
metadata: { name: cfg }
spec:
${spec}`

const TEMPLATE = (apiVersion: string, spec: string) => `apiVersion: ${apiVersion}
kind: KubeadmConfigTemplate
metadata: { name: tpl }
spec:
  template:
    spec:
${spec}`

const input = (...docs: string[]) => docs.join('\n---\n')
const v1beta1 = (config = '  files: []') =>
  input(
    CLUSTER('cluster.x-k8s.io/v1beta1'),
    MACHINE('cluster.x-k8s.io/v1beta1'),
    CONFIG('bootstrap.cluster.x-k8s.io/v1beta1', config),
  )
const v1beta2 = (config: string) =>
  input(
    CLUSTER('cluster.x-k8s.io/v1beta2'),
    MACHINE('cluster.x-k8s.io/v1beta2'),
    CONFIG('bootstrap.cluster.x-k8s.io/v1beta2', config),
  )

/** 1-based line of the first line of `text` that contains `marker` (below the first line containing `after`). */
function lineOf(text: string, marker: string, after?: string): number {
  const lines = text.split('\n')
  const from = after === undefined ? -1 : lines.findIndex((l) => l.includes(after))
  const i = lines.findIndex((l, n) => n > from && l.includes(marker))
  if (i < 0) throw new Error(`test bug: ${marker} is not in the input`)
  return i + 1
}

function problemsOf(text: string): Located[] {
  try {
    parseBootstrapObjects(text, 'objects.yaml')
  } catch (err) {
    if (err instanceof YamlProblemsError) return [...err.problems]
    throw err
  }
  throw new Error('expected the input to be refused')
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

describe('bootstrap data input: Cluster API apiVersions converted to the internal shape', () => {
  it('v1alpha3: a Machine named by its cluster-name label, controlPlaneInitialized as a condition', () => {
    const objects = parseBootstrapObjects(
      input(
        CLUSTER(
          'cluster.x-k8s.io/v1alpha3',
          'status: { infrastructureReady: true, controlPlaneInitialized: true }',
        ),
        MACHINE('cluster.x-k8s.io/v1alpha3', 'failureDomain: a', '{ cluster.x-k8s.io/cluster-name: demo }'),
        CONFIG(
          'bootstrap.cluster.x-k8s.io/v1alpha3',
          '  clusterConfiguration: { useHyperKubeImage: true, dns: { type: kube-dns, imageTag: v1.9.3 } }',
        ),
      ),
      'objects.yaml',
    )
    expect(objects.machines[0]?.spec.clusterName).to.equal('demo')
    expect(objects.clusters[0]?.status).to.deep.equal({
      infrastructureReady: true,
      conditions: [{ type: 'ControlPlaneInitialized', status: 'True' }],
    })
    expect(objects.configs.get('KubeadmConfig/cfg')?.spec.clusterConfiguration).to.deep.equal({
      dns: { imageTag: 'v1.9.3' },
    })
  })

  it('v1alpha3: controlPlaneInitialized turns an existing False condition True', () => {
    const status = `status:
  controlPlaneInitialized: true
  conditions: [{ type: ControlPlaneInitialized, status: "False", reason: WaitingForControlPlane }]`
    const objects = parseBootstrapObjects(
      input(
        CLUSTER('cluster.x-k8s.io/v1alpha3', status),
        MACHINE('cluster.x-k8s.io/v1alpha4'),
        CONFIG('bootstrap.cluster.x-k8s.io/v1alpha4', '  files: []'),
      ),
      'objects.yaml',
    )
    expect(objects.clusters[0]?.status?.conditions).to.deep.equal([
      { type: 'ControlPlaneInitialized', status: 'True', reason: 'WaitingForControlPlane' },
    ])
  })

  it('v1beta2 Cluster: initialization → infrastructureReady and ControlPlaneInitialized; conditions pass through', () => {
    const status = `status:
  initialization: { infrastructureProvisioned: false, controlPlaneInitialized: true }
  conditions:
    - { type: InfrastructureReady, status: "False", reason: Provisioning, message: "waiting for the load balancer", observedGeneration: 3 }
  deprecated: { v1beta1: { conditions: [{ type: Ready, status: "False" }] } }`
    const objects = parseBootstrapObjects(
      input(
        CLUSTER('cluster.x-k8s.io/v1beta2', status),
        MACHINE('cluster.x-k8s.io/v1beta2'),
        CONFIG('bootstrap.cluster.x-k8s.io/v1beta2', '  files: []'),
      ),
      'objects.yaml',
    )
    expect(objects.clusters[0]?.status).to.deep.equal({
      infrastructureReady: false,
      conditions: [
        {
          type: 'InfrastructureReady',
          status: 'False',
          reason: 'Provisioning',
          message: 'waiting for the load balancer',
          observedGeneration: 3,
        },
        { type: 'ControlPlaneInitialized', status: 'True' },
      ],
    })
  })

  it('v1beta2 KubeadmConfig: argument lists, TTL and timeouts in seconds, *bool and value fields', () => {
    const spec = `  clusterConfiguration:
    apiServer: { extraArgs: [{ name: b, value: "2" }, { name: a, value: "1" }] }
    scheduler: { extraArgs: [] }
    encryptionAlgorithm: RSA-2048
    caCertificateValidityPeriodDays: 3650
  initConfiguration:
    bootstrapTokens: [{ token: abcdef.0123456789abcdef, ttlSeconds: 90 }]
    nodeRegistration: { kubeletExtraArgs: [{ name: node-labels, value: "a=b" }] }
    timeouts: { controlPlaneComponentHealthCheckSeconds: 3600, etcdAPICallSeconds: 120 }
  joinConfiguration:
    controlPlane: {}
    timeouts: { tlsBootstrapSeconds: 300, controlPlaneComponentHealthCheckSeconds: 3600 }
  files:
    - { path: /a, content: x, append: true, contentFormat: Raw }
    - { path: /b, contentFrom: { secret: { name: s, key: k } } }
  diskSetup: { partitions: [{ device: /dev/sdb, tableType: gpt }] }
  ignition: { containerLinuxConfig: { strict: true } }
  format: ignition`
    const text = `${v1beta2(spec)}\n---\napiVersion: v1\nkind: Secret\nmetadata: { name: s }\nstringData: { k: v }`
    const got = parseBootstrapObjects(text, 'objects.yaml').configs.get('KubeadmConfig/cfg')?.spec
    expect(got).to.deep.equal({
      clusterConfiguration: {
        apiServer: { extraArgs: { b: '2', a: '1' }, timeoutForControlPlane: '1h0m0s' },
        scheduler: { extraArgs: {} },
      },
      initConfiguration: {
        bootstrapTokens: [{ token: 'abcdef.0123456789abcdef', ttl: '1m30s' }],
        nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'a=b' } },
      },
      joinConfiguration: { controlPlane: {}, discovery: { timeout: '5m0s' } },
      files: [
        { path: '/a', content: 'x', append: true },
        { path: '/b', contentFrom: { secret: { name: 's', key: 'k' } } },
      ],
      diskSetup: { partitions: [{ device: '/dev/sdb', tableType: 'gpt', layout: false }] },
      ignition: { containerLinuxConfig: { strict: true } },
      format: 'ignition',
    })
  })

  it('v1beta2 KubeadmConfigTemplate: kubeletExtraArgs become a map', () => {
    const text = input(
      CLUSTER('cluster.x-k8s.io/v1beta2'),
      MACHINE('cluster.x-k8s.io/v1beta2')
        .replace('kind: KubeadmConfig,', 'kind: KubeadmConfigTemplate,')
        .replace('name: cfg', 'name: tpl'),
      TEMPLATE(
        'bootstrap.cluster.x-k8s.io/v1beta2',
        '      joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: x, value: "1" }] } }',
      ),
    )
    const spec = parseBootstrapObjects(text, 'objects.yaml').configs.get('KubeadmConfigTemplate/tpl')?.spec
    expect(spec?.joinConfiguration).to.deep.equal({ nodeRegistration: { kubeletExtraArgs: { x: '1' } } })
  })

  it('infrastructure objects of any kind and version are accepted and ignored', () => {
    const text = input(
      v1beta1(),
      'apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: AWSMachine\nmetadata: { name: m0 }\nspec: { instanceType: t3.large }',
      'apiVersion: infrastructure.cluster.x-k8s.io/v1alpha3\nkind: DockerCluster\nmetadata: { name: demo }',
      'apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: SomethingNew\nspec: 3',
    )
    const objects = parseBootstrapObjects(text, 'objects.yaml')
    expect(objects.machines.map((m) => m.metadata.name)).to.deep.equal(['m0'])
    expect(objects.clusters.map((c) => c.metadata.name)).to.deep.equal(['demo'])
  })

  it('goDuration prints seconds as metav1.Duration does', () => {
    const cases: Array<[number, string]> = [
      [0, '0s'],
      [45, '45s'],
      [60, '1m0s'],
      [90, '1m30s'],
      [3600, '1h0m0s'],
      [86400, '24h0m0s'],
      [90061, '25h1m1s'],
    ]
    for (const [seconds, want] of cases) expect(goDuration(seconds), String(seconds)).to.equal(want)
  })
})

interface BadCase {
  text: string
  /** Key path of the problem, as printed. */
  path: string
  /** Its line: the first line containing this marker (after `after`, if given). */
  line: [marker: string, after?: string]
  message: RegExp
}

const supported = (group: string) =>
  ['v1alpha3', 'v1alpha4', 'v1beta1', 'v1beta2'].map((v) => escape(`${group}/${v}`)).join(', ')

const badInputs: Record<string, BadCase> = {
  'an unsupported apiVersion (v1alpha2)': {
    text: input(
      CLUSTER('cluster.x-k8s.io/v1beta1'),
      MACHINE('cluster.x-k8s.io/v1alpha2'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1beta1', '  files: []'),
    ),
    path: 'apiVersion',
    line: ['cluster.x-k8s.io/v1alpha2'],
    message: new RegExp(
      `"cluster\\.x-k8s\\.io/v1alpha2" is not a supported apiVersion of Machine; supported: ${supported('cluster.x-k8s.io')} \\(Machine "m0"\\)`,
    ),
  },
  'a Cluster in the bootstrap group': {
    text: input(
      CLUSTER('bootstrap.cluster.x-k8s.io/v1beta1'),
      MACHINE('cluster.x-k8s.io/v1beta1'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1beta1', '  files: []'),
    ),
    path: 'apiVersion',
    line: ['bootstrap.cluster.x-k8s.io/v1beta1'],
    message:
      /"bootstrap\.cluster\.x-k8s\.io\/v1beta1" is not a supported apiVersion of Cluster; supported: cluster\.x-k8s\.io\/v1alpha3, .* \(Cluster "demo"\)/,
  },
  'a KubeadmConfig without apiVersion': {
    text: v1beta1().replace('apiVersion: bootstrap.cluster.x-k8s.io/v1beta1\n', ''),
    path: 'apiVersion',
    line: ['kind: KubeadmConfig', 'configRef'],
    message: new RegExp(
      `required key is missing; supported: ${supported('bootstrap.cluster.x-k8s.io')} \\(KubeadmConfig "cfg"\\)`,
    ),
  },
  'a Secret that is not v1': {
    text: `${v1beta1()}\n---\napiVersion: v2\nkind: Secret\nmetadata: { name: s }`,
    path: 'apiVersion',
    line: ['apiVersion: v2'],
    message: /"v2" is not a supported apiVersion of Secret; supported: v1 \(Secret "s"\)/,
  },
  'a control-plane kind stays unknown': {
    text: `${v1beta1()}\n---\napiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: KubeadmControlPlane\nmetadata: { name: kcp }`,
    path: 'kind',
    line: ['kind: KubeadmControlPlane'],
    message:
      /expected kind Cluster, Machine, KubeadmConfig, KubeadmConfigTemplate, Secret \(or any infrastructure\.cluster\.x-k8s\.io kind, which is ignored\) \(document 4\)/,
  },
  'v1beta2 duplicate extraArgs': {
    text: v1beta2(
      '  clusterConfiguration:\n    apiServer:\n      extraArgs:\n        - { name: audit-log-maxage, value: "30" }\n        - { name: audit-log-maxage, value: "60" }',
    ),
    path: 'spec.clusterConfiguration.apiServer.extraArgs[1].name',
    line: ['value: "60"'],
    message: /duplicate argument "audit-log-maxage" \(also at extraArgs\[0\]\).* \(KubeadmConfig "cfg"\)/,
  },
  'v1beta2 duplicate kubeletExtraArgs in a template': {
    text: input(
      CLUSTER('cluster.x-k8s.io/v1beta2'),
      MACHINE('cluster.x-k8s.io/v1beta2'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1beta2', '  files: []'),
      TEMPLATE(
        'bootstrap.cluster.x-k8s.io/v1beta2',
        '      joinConfiguration:\n        nodeRegistration:\n          kubeletExtraArgs:\n            - { name: v, value: "1" }\n            - { name: v, value: "2" }',
      ),
    ),
    path: 'spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs[1].name',
    line: ['value: "2"'],
    message: /duplicate argument "v" \(also at kubeletExtraArgs\[0\]\).* \(KubeadmConfigTemplate "tpl"\)/,
  },
  'v1beta2 extraArgs given as a v1beta1 map': {
    text: v1beta2('  clusterConfiguration:\n    scheduler:\n      extraArgs: { v: "2" }'),
    path: 'spec.clusterConfiguration.scheduler.extraArgs',
    line: ['extraArgs: { v: "2" }'],
    message: /must be a list of \{name, value\} in v1beta2 \(KubeadmConfig "cfg"\)/,
  },
  'v1beta2 argument value that is not a string': {
    text: v1beta2(
      '  initConfiguration:\n    nodeRegistration:\n      kubeletExtraArgs:\n        - { name: max-pods, value: 110 }',
    ),
    path: 'spec.initConfiguration.nodeRegistration.kubeletExtraArgs[0]',
    line: ['max-pods'],
    message: /must be \{name, value\} with a non-empty string name and a string value/,
  },
  'v1alpha3 Machine without clusterName or cluster-name label': {
    text: input(
      CLUSTER('cluster.x-k8s.io/v1alpha3'),
      MACHINE('cluster.x-k8s.io/v1alpha3', 'failureDomain: a', '{ cluster.x-k8s.io/control-plane: "" }'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1alpha3', '  files: []'),
    ),
    path: 'spec.clusterName',
    line: ['failureDomain: a'],
    message:
      /required: a v1alpha3 Machine names its Cluster in spec\.clusterName or in the label cluster\.x-k8s\.io\/cluster-name, and neither is set \(Machine "m0"\)/,
  },
  'v1beta1 Machine without clusterName (the label is v1alpha3 only)': {
    text: input(
      CLUSTER('cluster.x-k8s.io/v1beta1'),
      MACHINE('cluster.x-k8s.io/v1beta1', 'failureDomain: a', '{ cluster.x-k8s.io/cluster-name: demo }'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1beta1', '  files: []'),
    ),
    path: 'spec.clusterName',
    line: ['failureDomain: a'],
    message: /required key is missing \(Machine "m0"\)/,
  },
  'v1beta2 ClusterConfiguration with kubernetesVersion': {
    text: v1beta2('  clusterConfiguration:\n    kubernetesVersion: v1.31.13'),
    path: 'spec.clusterConfiguration.kubernetesVersion',
    line: ['kubernetesVersion: v1.31.13'],
    message: /not a v1beta2 field: v1beta2 takes it from the Cluster and the Machine/,
  },
  'v1beta2 bootstrap token with a v1beta1 ttl': {
    text: v1beta2(
      '  initConfiguration:\n    bootstrapTokens:\n      - { token: abcdef.0123456789abcdef, ttl: 1h }',
    ),
    path: 'spec.initConfiguration.bootstrapTokens[0].ttl',
    line: ['ttl: 1h'],
    message: /not a v1beta2 field: use ttlSeconds/,
  },
  'v1beta2 negative timeout': {
    text: v1beta2('  joinConfiguration:\n    timeouts:\n      tlsBootstrapSeconds: -5'),
    path: 'spec.joinConfiguration.timeouts.tlsBootstrapSeconds',
    line: ['tlsBootstrapSeconds'],
    message: /must be an integer number of seconds, 0 or more/,
  },
  'v1beta2 unknown timeout': {
    text: v1beta2('  initConfiguration:\n    timeouts:\n      controlPlaneComponentHealthCheck: 4m'),
    path: 'spec.initConfiguration.timeouts.controlPlaneComponentHealthCheck',
    line: ['controlPlaneComponentHealthCheck: 4m'],
    message: /unknown key/,
  },
  'v1beta2 templated file content': {
    text: v1beta2(
      '  files:\n    - path: /etc/version\n      content: "{{ .controlPlane.version }}"\n      contentFormat: Template',
    ),
    path: 'spec.files[0].contentFormat',
    line: ['contentFormat: Template'],
    message: /Template is not supported/,
  },
  'v1beta2 encryption algorithm other than the one used': {
    text: v1beta2('  clusterConfiguration:\n    encryptionAlgorithm: ECDSA-P256'),
    path: 'spec.clusterConfiguration.encryptionAlgorithm',
    line: ['encryptionAlgorithm'],
    message: /"ECDSA-P256" is not supported: .* set "RSA-2048"/,
  },
  'v1beta2 useExperimentalRetryJoin': {
    text: v1beta2('  useExperimentalRetryJoin: true'),
    path: 'spec.useExperimentalRetryJoin',
    line: ['useExperimentalRetryJoin'],
    message: /not a v1beta2 field: removed in v1beta2/,
  },
  'v1beta2 Cluster initialization that is not boolean': {
    text: input(
      CLUSTER('cluster.x-k8s.io/v1beta2', 'status:\n  initialization:\n    controlPlaneInitialized: "yes"'),
      MACHINE('cluster.x-k8s.io/v1beta2'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1beta2', '  files: []'),
    ),
    path: 'status.initialization.controlPlaneInitialized',
    line: ['controlPlaneInitialized: "yes"'],
    message: /must be boolean \(Cluster "demo"\)/,
  },
  'a condition status that is a YAML boolean': {
    text: input(
      CLUSTER(
        'cluster.x-k8s.io/v1beta1',
        'status:\n  conditions:\n    - { type: ControlPlaneInitialized, status: true }',
      ),
      MACHINE('cluster.x-k8s.io/v1beta1'),
      CONFIG('bootstrap.cluster.x-k8s.io/v1beta1', '  files: []'),
    ),
    path: 'status.conditions[0].status',
    line: ['status: true'],
    message: /must be one of "True", "False", "Unknown"/,
  },
  'a Kubernetes version this tool does not serve': {
    text: v1beta1().replace('version: v1.31.13', 'version: v1.14.2'),
    path: 'spec.version',
    line: ['version: v1.14.2'],
    message: new RegExp(
      `Kubernetes v1\\.14\\.2 is not supported; supported: ${escape(supportedVersions().join(', '))} \\(Machine "m0"\\)`,
    ),
  },
  'a patch other than the pinned one': {
    text: v1beta1().replace('version: v1.31.13', 'version: v1.31.2'),
    path: 'spec.version',
    line: ['version: v1.31.2'],
    message:
      /Kubernetes v1\.31\.2 is not supported \(the supported patch of v1\.31 is v1\.31\.13\); supported: /,
  },
}

describe('bootstrap data input: bad Cluster API objects name the key path and line', () => {
  for (const [name, tc] of Object.entries(badInputs)) {
    it(name, () => {
      const problems = problemsOf(tc.text)
      const found = problems.find((p) => formatPath(p.path) === tc.path)
      const all = problems.map((p) => `${p.line}: ${formatPath(p.path)}: ${p.message}`).join('\n')
      expect(found, all).to.not.equal(undefined)
      expect(found?.message, all).to.match(tc.message)
      expect(found?.line, all).to.equal(lineOf(tc.text, ...tc.line))
    })
  }

  it('reports the same key once, even when the schema sees it too', () => {
    const text = v1beta2('  files:\n    - { path: /a, content: x, contentFormat: Template }')
    const problems = problemsOf(text).filter((p) => formatPath(p.path) === 'spec.files[0].contentFormat')
    expect(problems.map((p) => p.message)).to.have.length(1)
  })
})
