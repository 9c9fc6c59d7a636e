/**
 * Rendering from every Cluster API apiVersion: the kubeadm-ignition README's v1alpha3 objects, and one
 * small cluster written in v1alpha3, v1alpha4, v1beta1 and v1beta2 that must render the same data.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { parseAllDocuments } from 'yaml'
import { expect } from '../support/chai.js'
import { generateBootstrapData, type OutputFormat } from '../../src/lib/bootstrapdata/index.js'
import { parseYamlDocuments, stringifyYaml, YamlProblemsError } from '../../src/lib/yaml/index.js'
import { supportedVersions } from '../../src/lib/versions/index.js'
import { FIXTURES, tempWorkspace, testDeps, testOptions, validateUserData } from './helpers.js'
import { nodeFiles } from './node-files.js'

const SEED = 'seed-kubeadm-ignition.yaml'
const VERSIONS = ['v1alpha3', 'v1alpha4', 'v1beta1', 'v1beta2'] as const

interface Rendered {
  roles: Record<string, string>
  documents: Record<string, string>
  waiting: string[]
}

async function render(
  input: string,
  inputFile: string,
  format: OutputFormat,
  machine?: string,
): Promise<Rendered> {
  const ws = await tempWorkspace()
  try {
    const result = await generateBootstrapData(
      testOptions(ws.dir, { inputFile, format, ...(machine ? { machine } : {}) }),
      await testDeps(input),
    )
    const out: Rendered = { roles: {}, documents: {}, waiting: result.waiting.map((w) => w.machine) }
    for (const m of result.machines) {
      out.roles[m.machine] = m.role
      out.documents[m.machine] = await readFile(m.file, 'utf8')
    }
    return out
  } finally {
    await ws.cleanup()
  }
}

/** The kubeadm configuration a document hands to kubeadm, as objects by kind. */
function kubeadmConfig(document: string): Record<string, Record<string, unknown>> {
  const files = nodeFiles(document)
  const text = [...files].find(([p]) => /\/kubeadm(-join-config)?\.ya?ml$/.test(p))?.[1]
  if (text === undefined) throw new Error(`no kubeadm config among ${[...files.keys()].join(', ')}`)
  const docs = parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>)
  return Object.fromEntries(docs.map((d) => [String(d.kind), d]))
}

/** The input with the Cluster's status removed: nothing initialized yet, so the control plane inits. */
function withoutClusterStatus(text: string): string {
  return parseYamlDocuments(text, 'input.yaml')
    .map(({ value }) => {
      const doc = value as Record<string, unknown>
      if (doc.kind === 'Cluster') delete doc.status
      return stringifyYaml(doc)
    })
    .join('---\n')
}

describe('bootstrap data from the kubeadm-ignition README objects (v1alpha3)', () => {
  it('refuses them as given: Kubernetes v1.14.2 is not served, with the line and the supported versions', async () => {
    const text = await readFile(path.join(FIXTURES, SEED), 'utf8')
    const line = text.split('\n').findIndex((l) => l.includes('version: "v1.14.2"')) + 1
    const err = await render(text, SEED, 'ignition').then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).to.be.instanceOf(YamlProblemsError)
    const want = `${SEED}:${line}:3: spec.version: Kubernetes v1.14.2 is not supported; supported: ${supportedVersions().join(', ')} (Machine "my-control-plane1")`
    expect((err as Error).message).to.contain(want)
    // that is the only problem: the v1alpha3 shapes, the label-named Cluster and the Docker objects are fine
    expect((err as YamlProblemsError).problems).to.have.length(1)
  })

  it('with a supported version renders valid Ignition init data carrying the user kubeadm args', async () => {
    const version = supportedVersions().at(-1) as string
    const text = (await readFile(path.join(FIXTURES, SEED), 'utf8')).replace(
      'version: "v1.14.2"',
      `version: "${version}"`,
    )
    const got = await render(text, SEED, 'ignition')
    expect(got.roles).to.deep.equal({ 'my-control-plane1': 'init' })
    const document = got.documents['my-control-plane1'] as string
    await validateUserData(document) // ignition-validate
    const config = kubeadmConfig(document)
    expect(config.ClusterConfiguration).to.deep.include({
      clusterName: 'my-cluster', // the Machine's cluster-name label named it
      kubernetesVersion: version,
      controllerManager: { extraArgs: [{ name: 'enable-hostpath-provisioner', value: 'true' }] },
    })
    const registration = config.InitConfiguration?.nodeRegistration as Record<string, unknown>
    expect(registration.kubeletExtraArgs).to.deep.equal([
      { name: 'eviction-hard', value: 'nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%' },
    ])
  })
})

describe('one small cluster in v1alpha3, v1alpha4, v1beta1 and v1beta2 renders the same data', () => {
  const fixture = (v: string) => readFile(path.join(FIXTURES, `small-cluster.${v}.yaml`), 'utf8')

  it('joins (the control plane is initialized): the same documents and kubeadm configs', async () => {
    const rendered: Record<string, Rendered> = {}
    for (const v of VERSIONS)
      rendered[v] = await render(await fixture(v), `small-cluster.${v}.yaml`, 'cloud-config')
    const want = rendered.v1beta1 as Rendered
    expect(want.roles).to.deep.equal({ 'cp-0': 'control-plane-join', 'worker-0': 'worker-join' })
    const worker = kubeadmConfig(want.documents['worker-0'] as string)
    expect(
      (worker.JoinConfiguration?.nodeRegistration as Record<string, unknown>).kubeletExtraArgs,
    ).to.deep.equal([
      { name: 'cloud-provider', value: 'external' },
      { name: 'node-labels', value: 'tier=workers' },
    ])
    for (const v of VERSIONS) {
      const got = rendered[v] as Rendered
      expect(got.roles, v).to.deep.equal(want.roles)
      for (const machine of Object.keys(want.documents)) {
        const document = got.documents[machine] as string
        expect(kubeadmConfig(document), `${v} ${machine}`).to.deep.equal(
          kubeadmConfig(want.documents[machine] as string),
        )
        expect(document, `${v} ${machine}`).to.equal(want.documents[machine])
      }
    }
    await validateUserData(want.documents['cp-0'] as string)
  })

  it('init (no status yet): the same init data, with every converted argument and timeout', async () => {
    const rendered: Record<string, Rendered> = {}
    for (const v of VERSIONS)
      rendered[v] = await render(
        withoutClusterStatus(await fixture(v)),
        `small-cluster.${v}.yaml`,
        'cloud-config',
        'cp-0',
      )
    const want = rendered.v1beta1 as Rendered
    expect(want.roles).to.deep.equal({ 'cp-0': 'init' })
    const config = kubeadmConfig(want.documents['cp-0'] as string)
    expect(config.ClusterConfiguration).to.deep.include({
      clusterName: 'small',
      kubernetesVersion: 'v1.31.13',
      apiServer: { certSANs: ['api.small.example'], extraArgs: [{ name: 'audit-log-maxage', value: '30' }] },
      controllerManager: { extraArgs: [{ name: 'enable-hostpath-provisioner', value: 'true' }] },
      etcd: { local: { extraArgs: [{ name: 'quota-backend-bytes', value: '8589934592' }] } },
    })
    expect(config.InitConfiguration).to.deep.include({
      bootstrapTokens: [{ token: 'abcdef.0123456789abcdef', ttl: '24h0m0s' }],
      timeouts: { controlPlaneComponentHealthCheck: '5m0s' },
    })
    for (const v of VERSIONS) {
      const got = rendered[v] as Rendered
      expect(got.roles, v).to.deep.equal(want.roles)
      const document = got.documents['cp-0'] as string
      expect(kubeadmConfig(document), v).to.deep.equal(config)
      expect(document, v).to.equal(want.documents['cp-0'])
    }
    await validateUserData(want.documents['cp-0'] as string)
  })
})
