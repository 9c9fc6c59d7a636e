/**
 * The Kubernetes API contract fake (a TEST DOUBLE) held to the REAL kubectl 1.35.2 for its everyday
 * reads: human-readable `get` (kube-apiserver answers those with Table responses, whose columns are
 * its printers'), short names and discovery of apps/v1, the namespaces every cluster has, health
 * and version endpoints, and `auth whoami` (a SelfSubjectReview). The expected lines are what
 * kubectl prints from the columns and cells kube-apiserver's printers produce for these objects.
 */
import https from 'node:https'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { type KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { KubectlHarness } from '../support/kubectl-harness.js'

const AGE = String.raw`\d+s`

const node = (name: string, extra: { labels?: Record<string, string>; spec?: object; status: object }) =>
  ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: extra.labels ?? {} },
    ...(extra.spec ? { spec: extra.spec } : {}),
    status: extra.status,
  }) as KubeObject

const readyCondition = (status: string) => ({
  type: 'Ready',
  status,
  reason: status === 'True' ? 'KubeletReady' : 'NodeStatusUnknown',
  message: '',
})

describe('Kubernetes API contract fake: the everyday reads of the real kubectl 1.35 (Tables, namespaces, health, whoami)', function () {
  this.timeout(60_000)
  let h: KubectlHarness
  let api: FakeApiServer
  beforeEach(async () => {
    h = await KubectlHarness.start({ timeoutMs: 30_000 })
    api = h.api
  })
  afterEach(async () => h?.stop())

  const kubectl = (...args: string[]) => h.kubectl(...args)
  const ok = (...args: string[]) => h.ok(...args)
  const apply = (yaml: string) => h.apply(yaml)
  /** The header line, its columns split where kubectl's tabwriter put 3+ spaces (names hold 1). */
  const header = (out: string) => (out.split('\n')[0] ?? '').trim().split(/\s{2,}/)

  describe("get: Table responses with the columns of kube-apiserver's printers", () => {
    beforeEach(() => {
      api.put(
        'v1',
        'nodes',
        node('control-plane-0', {
          labels: { 'node-role.kubernetes.io/control-plane': '' },
          status: {
            addresses: [
              { type: 'InternalIP', address: '10.9.0.1' },
              { type: 'Hostname', address: 'control-plane-0' },
            ],
            nodeInfo: {
              kubeletVersion: 'v1.31.13',
              osImage: 'Debian GNU/Linux 12 (bookworm)',
              kernelVersion: '6.1.0-18-amd64',
              containerRuntimeVersion: 'containerd://1.7.13',
            },
            conditions: [readyCondition('True')],
          },
        }),
      )
      api.put(
        'v1',
        'nodes',
        node('worker-0', {
          labels: { 'kubernetes.io/role': 'edge' },
          spec: { unschedulable: true },
          status: {
            addresses: [
              { type: 'InternalIP', address: '10.9.0.2' },
              { type: 'ExternalIP', address: '203.0.113.5' },
            ],
            nodeInfo: { kubeletVersion: 'v1.31.13' },
            conditions: [readyCondition('Unknown')],
          },
        }),
      )
      api.put('v1', 'nodes', node('worker-1', { status: {} }))
    })

    it('get nodes -o wide: STATUS from the Ready condition, ROLES from the role labels, addresses and nodeInfo', async () => {
      const wide = await ok('get', 'nodes', '-o', 'wide')
      expect(header(wide)).to.deep.equal([
        'NAME',
        'STATUS',
        'ROLES',
        'AGE',
        'VERSION',
        'INTERNAL-IP',
        'EXTERNAL-IP',
        'OS-IMAGE',
        'KERNEL-VERSION',
        'CONTAINER-RUNTIME',
      ])
      expect(wide).to.match(
        new RegExp(
          String.raw`^control-plane-0\s+Ready\s+control-plane\s+${AGE}\s+v1\.31\.13\s+10\.9\.0\.1\s+<none>\s+Debian GNU/Linux 12 \(bookworm\)\s+6\.1\.0-18-amd64\s+containerd://1\.7\.13$`,
          'm',
        ),
      )
      expect(wide).to.match(
        new RegExp(
          String.raw`^worker-0\s+NotReady,SchedulingDisabled\s+edge\s+${AGE}\s+v1\.31\.13\s+10\.9\.0\.2\s+203\.0\.113\.5\s+<unknown>\s+<unknown>\s+<unknown>$`,
          'm',
        ),
      )
      expect(wide).to.match(
        new RegExp(String.raw`^worker-1\s+Unknown\s+<none>\s+${AGE}\s+<none>\s+<none>\s+<unknown>`, 'm'),
      )
      // without -o wide kubectl leaves out the columns of priority 1
      expect(header(await ok('get', 'nodes'))).to.deep.equal(['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION'])
      // one object is a Table too; --sort-by makes kubectl ask for whole objects in the rows
      expect(await ok('get', 'node', 'worker-0')).to.match(
        /^worker-0\s+NotReady,SchedulingDisabled\s+edge\s/m,
      )
      const sorted = await ok('get', 'nodes', '--sort-by=.status.addresses[0].address', '--no-headers')
      expect(
        sorted
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(/\s+/)[0]),
      ).to.deep.equal(['worker-1', 'control-plane-0', 'worker-0'])
    })

    it('get deploy -A, ds, sts and rs: apps/v1 short names, and the workload printers with -o wide', async () => {
      await apply(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "registry.invalid/web:1"}, {name: proxy, image: "registry.invalid/proxy:2"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: demo}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {nodeSelector: {kubernetes.io/os: linux}, containers: [{name: agent, image: "registry.invalid/agent:3"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: demo}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "registry.invalid/db:4"}]}
`)
      const all = await eventually(
        'the Deployment ready',
        async () => {
          const out = await ok('get', 'deploy', '-A')
          return /\b2\/2\b/.test(out) ? out : undefined
        },
        20_000,
      )
      expect(header(all)).to.deep.equal(['NAMESPACE', 'NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE'])
      expect(all).to.match(new RegExp(String.raw`^demo\s+web\s+2/2\s+2\s+2\s+${AGE}$`, 'm'))

      const deploy = await ok('get', 'deploy', '-n', 'demo', '-o', 'wide')
      expect(header(deploy)).to.deep.equal([
        'NAME',
        'READY',
        'UP-TO-DATE',
        'AVAILABLE',
        'AGE',
        'CONTAINERS',
        'IMAGES',
        'SELECTOR',
      ])
      expect(deploy).to.match(
        new RegExp(
          String.raw`^web\s+2/2\s+2\s+2\s+${AGE}\s+web,proxy\s+registry\.invalid/web:1,registry\.invalid/proxy:2\s+app=web$`,
          'm',
        ),
      )
      const ds = await ok('get', 'ds', '-n', 'demo', '-o', 'wide')
      expect(header(ds)).to.deep.equal([
        'NAME',
        'DESIRED',
        'CURRENT',
        'READY',
        'UP-TO-DATE',
        'AVAILABLE',
        'NODE SELECTOR',
        'AGE',
        'CONTAINERS',
        'IMAGES',
        'SELECTOR',
      ])
      expect(ds).to.match(
        new RegExp(
          String.raw`^agent\s+1\s+1\s+1\s+1\s+1\s+kubernetes\.io/os=linux\s+${AGE}\s+agent\s+registry\.invalid/agent:3\s+app=agent$`,
          'm',
        ),
      )
      const sts = await ok('get', 'sts', '-n', 'demo', '-o', 'wide')
      expect(header(sts)).to.deep.equal(['NAME', 'READY', 'AGE', 'CONTAINERS', 'IMAGES'])
      expect(sts).to.match(new RegExp(String.raw`^db\s+1/1\s+${AGE}\s+db\s+registry\.invalid/db:4$`, 'm'))
      const rs = await ok('get', 'rs', '-n', 'demo')
      expect(header(rs)).to.deep.equal(['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE'])
      expect(rs).to.match(new RegExp(String.raw`^web-[a-z0-9]{10}\s+2\s+2\s+2\s+${AGE}$`, 'm'))
    })

    it("get pods, services, configmaps, secrets and leases: their printers' columns", async () => {
      const at = (name: string) => ({ name, namespace: 'demo' })
      api.put('v1', 'pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: at('web-0'),
        spec: { nodeName: 'worker-0', containers: [{ name: 'a' }, { name: 'b' }] },
        status: {
          phase: 'Running',
          podIPs: [{ ip: '10.244.1.7' }],
          containerStatuses: [
            { name: 'a', ready: true, restartCount: 0, state: { running: {} } },
            { name: 'b', ready: false, restartCount: 0, state: { waiting: { reason: 'CrashLoopBackOff' } } },
          ],
        },
      })
      api.put('v1', 'services', {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: at('web'),
        spec: {
          type: 'NodePort',
          selector: { app: 'web', tier: 'front' },
          ports: [{ port: 80 }, { port: 443, nodePort: 30443, protocol: 'TCP' }],
        },
      })
      api.put('v1', 'configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: at('settings'),
        data: { a: '1', b: '2' },
      })
      api.put('v1', 'secrets', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: at('creds'),
        data: { token: 'dG9rZW4=' },
      })
      api.put('coordination.k8s.io/v1', 'leases', {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: at('leader'),
        spec: { holderIdentity: 'web-0_1234' },
      })
      const pods = await ok('get', 'pods', '-n', 'demo', '-o', 'wide')
      expect(header(pods)).to.deep.equal([
        'NAME',
        'READY',
        'STATUS',
        'RESTARTS',
        'AGE',
        'IP',
        'NODE',
        'NOMINATED NODE',
        'READINESS GATES',
      ])
      expect(pods).to.match(
        new RegExp(
          String.raw`^web-0\s+1/2\s+CrashLoopBackOff\s+0\s+${AGE}\s+10\.244\.1\.7\s+worker-0\s+<none>\s+<none>$`,
          'm',
        ),
      )
      const svc = await ok('get', 'svc', '-n', 'demo', '-o', 'wide')
      expect(header(svc)).to.deep.equal([
        'NAME',
        'TYPE',
        'CLUSTER-IP',
        'EXTERNAL-IP',
        'PORT(S)',
        'AGE',
        'SELECTOR',
      ])
      expect(svc).to.match(
        new RegExp(
          String.raw`^web\s+NodePort\s+10\.96\.\d+\.\d+\s+<none>\s+80/TCP,443:30443/TCP\s+${AGE}\s+app=web,tier=front$`,
          'm',
        ),
      )
      const cm = await ok('get', 'cm', '-n', 'demo')
      expect(header(cm)).to.deep.equal(['NAME', 'DATA', 'AGE'])
      expect(cm).to.match(new RegExp(String.raw`^settings\s+2\s+${AGE}$`, 'm'))
      const secrets = await ok('get', 'secrets', '-n', 'demo')
      expect(header(secrets)).to.deep.equal(['NAME', 'TYPE', 'DATA', 'AGE'])
      expect(secrets).to.match(new RegExp(String.raw`^creds\s+Opaque\s+1\s+${AGE}$`, 'm'))
      const leases = await ok('get', 'leases', '-n', 'demo')
      expect(header(leases)).to.deep.equal(['NAME', 'HOLDER', 'AGE'])
      expect(leases).to.match(new RegExp(String.raw`^leader\s+web-0_1234\s+${AGE}$`, 'm'))
    })

    it('every other resource, a custom one too: NAME and AGE, as the server does for a CRD without printer columns', async () => {
      await apply(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`)
      await apply(`
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: demo}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: demo}
`)
      const widgets = await ok('get', 'widgets', '-n', 'demo')
      expect(header(widgets)).to.deep.equal(['NAME', 'AGE'])
      expect(widgets).to.match(new RegExp(String.raw`^w1\s+${AGE}$`, 'm'))
      expect(await ok('get', 'serviceaccounts', '-n', 'demo')).to.match(
        new RegExp(String.raw`^NAME\s+AGE\n(.*\n)*robot\s+${AGE}$`, 'm'),
      )
    })

    it('get -w: each change is a row under the same header', async () => {
      const watch = await h.background('get', 'nodes', '-w')
      await eventually(
        'the initial rows',
        async () => (/^worker-1\s/m.test(watch.stdout) ? true : undefined),
        20_000,
      )
      const worker = api.get('v1', 'nodes', 'worker-1')!
      api.put('v1', 'nodes', { ...worker, status: { conditions: [readyCondition('True')] } })
      await eventually(
        'the changed row',
        async () => (/^worker-1\s+Ready\s/m.test(watch.stdout) ? true : undefined),
        20_000,
      )
      expect(watch.stdout.match(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/gm)).to.have.length(1)
    })
  })

  it('get ns: the four namespaces every cluster has, one created and one an object was created in, all Active', async () => {
    await ok('create', 'namespace', 'demo')
    await ok('create', 'configmap', 'settings', '-n', 'implied', '--from-literal=a=1')
    const ns = await ok('get', 'ns')
    expect(header(ns)).to.deep.equal(['NAME', 'STATUS', 'AGE'])
    const rows = ns
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((l) => l.split(/\s+/).slice(0, 2).join(' '))
    expect(rows).to.deep.equal([
      'default Active',
      'demo Active',
      'implied Active',
      'kube-node-lease Active',
      'kube-public Active',
      'kube-system Active',
    ])
    expect(await ok('get', 'ns', 'demo', '-o', 'jsonpath={.metadata.labels}')).to.equal(
      '{"kubernetes.io/metadata.name":"demo"}',
    )
  })

  it("auth whoami: a SelfSubjectReview of the kubeconfig's user, the cluster admin of a kubeadm cluster", async () => {
    const out = await ok('auth', 'whoami')
    expect(out).to.match(/^ATTRIBUTE\s+VALUE$/m)
    expect(out).to.match(/^Username\s+kubernetes-admin$/m)
    expect(out).to.match(/^Groups\s+\[kubeadm:cluster-admins system:authenticated\]$/m)
    expect(JSON.parse(await ok('auth', 'whoami', '-o', 'json'))).to.deep.include({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    })
  })

  it('get --raw /readyz, /livez and their ?verbose lists, /version; health and version need no credentials', async () => {
    expect(await ok('get', '--raw', '/readyz')).to.equal('ok')
    expect(await ok('get', '--raw', '/livez')).to.equal('ok')
    expect(await ok('get', '--raw', '/readyz/ping')).to.equal('ok')
    const verbose = await ok('get', '--raw', '/readyz?verbose')
    expect(verbose).to.match(/^\[\+\]ping ok$/m)
    expect(verbose.trim().split('\n').at(-1)).to.equal('readyz check passed')
    expect((await ok('get', '--raw', '/livez?verbose')).trim().split('\n').at(-1)).to.equal(
      'livez check passed',
    )
    const unknownCheck = await kubectl('get', '--raw', '/readyz/no-such-check')
    expect(unknownCheck.code).to.equal(1)
    const version = JSON.parse(await ok('version', '-o', 'json')) as {
      serverVersion?: Record<string, string>
    }
    expect(version.serverVersion).to.include({ major: '1', minor: '31', gitVersion: 'v1.31.13' })
    expect(version.serverVersion).to.have.keys(
      'major',
      'minor',
      'gitVersion',
      'gitCommit',
      'gitTreeState',
      'buildDate',
      'goVersion',
      'compiler',
      'platform',
    )
    // as kube-apiserver's system:public-info-viewer role allows anyone
    for (const p of ['/readyz', '/livez', '/healthz', '/version'])
      expect((await anonymous(api, p)).status, p).to.equal(200)
    expect((await anonymous(api, '/api/v1/namespaces')).status).to.equal(401)
  })
})

/** A GET without credentials. */
function anonymous(api: FakeApiServer, pathAndQuery: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(`${api.url}${pathAndQuery}`, { ca: api.caPem }, (res) => {
        let body = ''
        res.on('data', (d: Buffer) => (body += d.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      .on('error', reject)
  })
}
