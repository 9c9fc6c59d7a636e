/**
 * The Kubernetes API contract fake (a TEST DOUBLE) held to the REAL kubectl 1.35.2, helm 3.17.3 and
 * helm 4.1.4 for what goes beyond CRUD: watch streams, workloads that become ready (or are kept
 * from it), and a server that goes away. Raw HTTPS requests check the watch protocol details no
 * binary shows directly (resourceVersion replay, 410 Expired, cleanup of closed watches).
 */
import https from 'node:https'
import path from 'node:path'
import { runProcess } from '../../src/lib/system/process.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { ADMIN_TOKEN, type KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { FIXTURE_CHARTS, realHelm, realKubectl, type HelmMajor } from '../support/helm.js'
import { KubectlHarness } from '../support/kubectl-harness.js'

const CHART = path.join(FIXTURE_CHARTS, 'workloads', '1.0.0')

const deployment = (name: string, image = 'registry.invalid/web:1') => `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, namespace: demo}
spec:
  replicas: 2
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec: {containers: [{name: web, image: "${image}"}]}
`

describe('Kubernetes API contract fake: watches, workload readiness and faults (real kubectl, helm 3 and 4)', function () {
  this.timeout(120_000)
  let h: KubectlHarness
  let api: FakeApiServer
  let kubeconfig: string
  let env: NodeJS.ProcessEnv
  beforeEach(async () => {
    h = await KubectlHarness.start({ timeoutMs: 60_000 })
    ;({ api, kubeconfig, env } = h)
  })
  afterEach(async () => {
    // a test that put a server of its own in place stops it here (stop() is idempotent)
    if (api !== h?.api) await api?.stop()
    await h?.stop()
  })

  const kubectl = (...args: string[]) => h.kubectl(...args)
  const ok = (...args: string[]) => h.ok(...args)
  const apply = (yaml: string) => h.apply(yaml)
  const background = (...args: string[]) => h.background(...args)
  const helm = async (major: HelmMajor, ...args: string[]) =>
    runProcess(await realHelm(major), ['--kubeconfig', kubeconfig, ...args], { env, timeoutMs: 90_000 })

  describe('kubectl get --watch sees the changes as they happen', () => {
    it('ADDED, MODIFIED and DELETED of ConfigMaps, only those its label selector matches', async () => {
      await ok('create', 'namespace', 'demo')
      await ok('create', 'configmap', 'before', '-n', 'demo', '--from-literal=a=1')
      await ok('label', 'configmap', 'before', '-n', 'demo', 'tier=web')
      const watch = await background(
        'get',
        'configmaps',
        '-n',
        'demo',
        '-w',
        '--output-watch-events',
        '-l',
        'tier in (web,api),!skip',
        '-o',
        // with --output-watch-events each printed object is the event: {type, object}
        'custom-columns=EVENT:.type,NAME:.object.metadata.name,A:.object.data.a',
      )
      await eventually(
        'the initial ADDED of the existing ConfigMap',
        async () => (/ADDED\s+before\s+1/.test(watch.stdout) ? true : undefined),
        20_000,
      )
      await ok('create', 'configmap', 'other', '-n', 'demo', '--from-literal=a=x') // no label: not shown
      await apply(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later, namespace: demo, labels: {tier: api}}\ndata: {a: "2"}\n',
      )
      await ok('patch', 'configmap', 'before', '-n', 'demo', '--type=merge', '-p', '{"data":{"a":"3"}}')
      await ok('delete', 'configmap', 'before', '-n', 'demo')
      await eventually(
        'the later events',
        async () => (/DELETED\s+before/.test(watch.stdout) ? true : undefined),
        20_000,
      )
      const events = watch.stdout
        .split('\n')
        .filter((l) => /^(ADDED|MODIFIED|DELETED)\s/.test(l))
        .map((l) => l.split(/\s+/).slice(0, 3).join(' '))
      expect(events).to.deep.equal([
        'ADDED before 1',
        'ADDED later 2',
        'MODIFIED before 3',
        'DELETED before 3',
      ])
    })

    it("--watch-only shows a Deployment go from created to ready (the controller's MODIFIED events)", async () => {
      await ok('create', 'namespace', 'demo')
      const watch = await background(
        'get',
        'deployments',
        '-n',
        'demo',
        '--watch-only',
        '--output-watch-events',
        '-o',
        'custom-columns=EVENT:.type,NAME:.object.metadata.name,READY:.object.status.readyReplicas',
      )
      await eventually('the watch to be open', async () => (api.openWatches > 0 ? true : undefined), 20_000)
      await apply(deployment('web'))
      await eventually(
        'ready replicas in a MODIFIED event',
        async () => (/MODIFIED\s+web\s+2/.test(watch.stdout) ? true : undefined),
        20_000,
      )
      expect(watch.stdout).to.match(/ADDED\s+web\s+<none>/)
    })
  })

  describe('the watch protocol (raw requests)', () => {
    it('replays the changes after a resourceVersion, and answers one no longer held with 410 Expired', async () => {
      await api.stop()
      api = await new FakeApiServer({ watchHistory: 3 }).start()
      const cm = (name: string, a: string): KubeObject => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'demo' },
        data: { a },
      })
      api.put('v1', 'configmaps', cm('one', '1'))
      const from = Number(api.get('v1', 'configmaps', 'one', 'demo')?.metadata.resourceVersion)
      api.put('v1', 'configmaps', cm('two', '1'))
      api.put('v1', 'configmaps', cm('one', '2'))
      const replay = await rawWatch(
        api,
        `/api/v1/namespaces/demo/configmaps?watch=true&resourceVersion=${from}&timeoutSeconds=1`,
      )
      expect(replay.map((e) => `${e.type} ${e.object.metadata.name}`)).to.deep.equal([
        'ADDED two',
        'MODIFIED one',
      ])
      api.put('v1', 'configmaps', cm('three', '1'))
      api.put('v1', 'configmaps', cm('four', '1'))
      const expired = await rawWatch(
        api,
        `/api/v1/namespaces/demo/configmaps?watch=true&resourceVersion=${from}`,
      )
      expect(expired).to.have.length(1)
      expect(expired[0]).to.deep.include({ type: 'ERROR' })
      expect(expired[0]?.object).to.include({ kind: 'Status', code: 410, reason: 'Expired' })
      // the watch-list protocol helm 4 uses: the state, then a bookmark marking its end
      const list = await rawWatch(
        api,
        '/api/v1/namespaces/demo/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dtwo',
      )
      expect(list.map((e) => e.type)).to.deep.equal(['ADDED', 'BOOKMARK'])
      expect(list[1]?.object.metadata.annotations).to.deep.equal({ 'k8s.io/initial-events-end': 'true' })
    })

    it('drops the watcher of a client that closes, and stop() ends the open ones without hanging', async () => {
      const first = openWatch(api, '/api/v1/namespaces/demo/configmaps?watch=true')
      const second = openWatch(api, '/api/v1/configmaps?watch=true')
      await eventually('both watches open', async () => (api.openWatches === 2 ? true : undefined), 10_000)
      first.close()
      await eventually(
        'the closed one dropped',
        async () => (api.openWatches === 1 ? true : undefined),
        10_000,
      )
      // stop() ends open watches (a hang would be this test's timeout)
      await api.stop()
      await second.ended
      expect(api.openWatches).to.equal(0)
    })

    it('filters plain lists by field selector and refuses selectors the real server refuses (400)', async () => {
      for (const name of ['a', 'b']) api.put('v1', 'configmaps', { metadata: { name, namespace: 'demo' } })
      expect(
        await ok('get', 'configmaps', '-A', '--field-selector', 'metadata.name=b', '-o', 'name'),
      ).to.equal('configmap/b\n')
      expect(
        await ok('get', 'configmaps', '-n', 'demo', '--field-selector', 'metadata.name!=b', '-o', 'name'),
      ).to.equal('configmap/a\n')
      const bad = await kubectl('get', 'configmaps', '-n', 'demo', '--field-selector', 'spec.nodeName=x')
      expect(bad.code).to.equal(1)
      expect(bad.stderr).to.include('field label not supported: spec.nodeName')
    })
  })

  describe('custom resources with a status subresource (CAPI objects), through the real kubectl', () => {
    const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: kubeadmconfigs.bootstrap.cluster.x-k8s.io}
spec:
  group: bootstrap.cluster.x-k8s.io
  scope: Namespaced
  names: {plural: kubeadmconfigs, kind: KubeadmConfig, singular: kubeadmconfig}
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
    const config = (spec: string, status: string) => `apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KubeadmConfig
metadata: {name: cp-0, namespace: default}
spec: ${spec}
status: ${status}
`
    const status = async () => ok('get', 'kubeadmconfig', 'cp-0', '-o', 'jsonpath={.status}')

    it('a write to the object keeps its status; only the status subresource changes it', async () => {
      await apply(CRD)
      await apply(config('{format: cloud-config}', '{ready: true}'))
      expect(await status(), 'a created object starts without the status it was sent with').to.equal('')
      await ok(
        'patch',
        'kubeadmconfig',
        'cp-0',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"ready":true}}',
      )
      expect(JSON.parse(await status())).to.deep.equal({ ready: true })
      await apply(config('{format: ignition}', '{ready: false, dataSecretName: other}'))
      expect(JSON.parse(await status()), 'apply of the object leaves the status alone').to.deep.equal({
        ready: true,
      })
      expect(await ok('get', 'kubeadmconfig', 'cp-0', '-o', 'jsonpath={.spec.format}')).to.equal('ignition')
      await ok('patch', 'kubeadmconfig', 'cp-0', '--type=merge', '-p', '{"status":{"ready":false}}')
      expect(JSON.parse(await status()), 'a patch of the object cannot change the status').to.deep.equal({
        ready: true,
      })
    })
  })

  describe('workloads become ready as a controller would make them', () => {
    it('an applied Deployment gets an owned ReplicaSet and status; rollout status and wait Available succeed', async () => {
      await ok('create', 'namespace', 'demo')
      await apply(deployment('web'))
      expect(await ok('rollout', 'status', 'deployment/web', '-n', 'demo', '--timeout=20s')).to.include(
        'successfully rolled out',
      )
      await ok('wait', '--for=condition=Available', 'deployment/web', '-n', 'demo', '--timeout=20s')
      const dep = api.get('apps/v1', 'deployments', 'web', 'demo')
      expect(dep?.metadata).to.include({ generation: 1 })
      expect(dep?.metadata.uid).to.match(/^[0-9a-f-]{36}$/)
      const [rs, ...more] = api.list('apps/v1', 'replicasets', 'demo')
      expect(more).to.deep.equal([])
      expect(rs?.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: 'web',
          uid: dep?.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ])
      expect(rs?.metadata.name).to.equal(`web-${rs?.metadata.labels?.['pod-template-hash']}`)
      expect(rs?.status).to.include({ readyReplicas: 2, availableReplicas: 2 })

      // a new template: generation 2, a second ReplicaSet, the old one scaled to 0; same uid
      await apply(deployment('web', 'registry.invalid/web:2'))
      await ok('rollout', 'status', 'deployment/web', '-n', 'demo', '--timeout=20s')
      const updated = api.get('apps/v1', 'deployments', 'web', 'demo')
      expect(updated?.metadata).to.include({
        generation: 2,
        uid: dep?.metadata.uid,
        creationTimestamp: dep?.metadata.creationTimestamp,
      })
      expect(updated?.status).to.include({ observedGeneration: 2, updatedReplicas: 2 })
      const replicas = api
        .list('apps/v1', 'replicasets', 'demo')
        .map((r) => (r.spec as { replicas: number }).replicas)
      expect(replicas.sort()).to.deep.equal([0, 2])
      // deleting the Deployment takes its ReplicaSets along (the garbage collector's part)
      await ok('delete', 'deployment', 'web', '-n', 'demo')
      expect(api.list('apps/v1', 'replicasets', 'demo')).to.deep.equal([])
    })

    it('a Service gets a clusterIP (not a headless or ExternalName one), a PVC is Bound', async () => {
      await ok('create', 'namespace', 'demo')
      await apply(`apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: headless, namespace: demo}
spec: {clusterIP: None, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: outside, namespace: demo}
spec: {type: ExternalName, externalName: example.invalid}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: demo}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`)
      const ip = (name: string) =>
        (api.get('v1', 'services', name, 'demo')?.spec as { clusterIP?: string }).clusterIP
      expect(ip('web')).to.match(/^10\.96\.\d+\.\d+$/)
      expect(ip('headless')).to.equal('None')
      expect(ip('outside')).to.equal(undefined)
      await ok('wait', '--for=jsonpath={.status.phase}=Bound', 'pvc/data', '-n', 'demo', '--timeout=20s')
    })

    it('kubectl rollout status waits on a Deployment kept unready and finishes once it is made ready', async () => {
      await ok('create', 'namespace', 'demo')
      api.keepUnready({ kind: 'Deployment', namespace: 'demo', name: 'web' })
      await apply(deployment('web'))
      const short = await kubectl('rollout', 'status', 'deployment/web', '-n', 'demo', '--timeout=2s')
      expect(short.code).to.equal(1)
      expect(short.stdout + short.stderr).to.match(
        /Waiting for deployment "web" rollout to finish: 0 of 2 updated replicas are available/,
      )
      const waiting = runProcess(
        await realKubectl(),
        ['--kubeconfig', kubeconfig, 'rollout', 'status', 'deployment/web', '-n', 'demo', '--timeout=20s'],
        { env, timeoutMs: 60_000 },
      )
      await new Promise((r) => setTimeout(r, 500))
      api.makeReady({ kind: 'Deployment', namespace: 'demo', name: 'web' })
      const done = await waiting
      expect(done.code, done.stderr).to.equal(0)
      expect(done.stdout).to.include('successfully rolled out')
    })

    it('keepUnready holds a StatefulSet, DaemonSet and Job at 0 ready; makeReady releases them', async () => {
      const workload = (kind: string, extra: Record<string, unknown> = {}): KubeObject => ({
        apiVersion: kind === 'Job' ? 'batch/v1' : 'apps/v1',
        kind,
        metadata: { name: 'w', namespace: 'demo' },
        spec: { template: { metadata: { labels: { app: 'w' } } }, ...extra },
      })
      const held = [
        { kind: 'StatefulSet', resource: 'statefulsets', apiVersion: 'apps/v1' },
        { kind: 'DaemonSet', resource: 'daemonsets', apiVersion: 'apps/v1' },
        { kind: 'Job', resource: 'jobs', apiVersion: 'batch/v1' },
      ]
      for (const h of held) {
        api.keepUnready({ kind: h.kind, name: 'w' })
        api.put(h.apiVersion, h.resource, workload(h.kind, h.kind === 'StatefulSet' ? { replicas: 2 } : {}))
      }
      const status = (h: (typeof held)[number]) =>
        (api.get(h.apiVersion, h.resource, 'w', 'demo')?.status ?? {}) as Record<string, unknown>
      await eventually(
        'the held status',
        async () =>
          held.every((h) => status(h).startTime ?? status(h).observedGeneration) ? true : undefined,
        5_000,
      )
      expect(status(held[0]!))
        .to.include({ replicas: 2, currentReplicas: 2 })
        .and.not.have.property('readyReplicas')
      expect(status(held[1]!)).to.include({ desiredNumberScheduled: 1, numberReady: 0, numberUnavailable: 1 })
      expect(status(held[2]!)).to.include({ active: 1 }).and.not.have.property('succeeded')
      for (const h of held) api.makeReady({ kind: h.kind, name: 'w' })
      await eventually(
        'the released status',
        async () => (status(held[2]!).succeeded === 1 ? true : undefined),
        5_000,
      )
      expect(status(held[0]!)).to.include({ readyReplicas: 2, availableReplicas: 2, observedGeneration: 1 })
      expect(status(held[1]!)).to.include({ numberReady: 1, numberAvailable: 1, observedGeneration: 1 })
      expect((status(held[2]!).conditions as Array<{ type: string }>).map((c) => c.type)).to.include(
        'Complete',
      )
    })

    for (const major of [3, 4] as const) {
      const wait = major === 3 ? '--wait' : '--wait=watcher'
      const rollback = major === 3 ? '--atomic' : '--rollback-on-failure'
      const install = (...flags: string[]) =>
        helm(major, 'install', 'wl', CHART, '-n', 'demo', '--create-namespace', wait, ...flags)

      it(`helm ${major} install ${wait} of Deployment, Service, DaemonSet, StatefulSet and ConfigMap returns deployed`, async () => {
        const r = await install('--timeout', '30s')
        expect(r.code, r.stderr).to.equal(0)
        expect(r.stdout).to.include('STATUS: deployed')
        expect(api.get('apps/v1', 'daemonsets', 'wl-agent', 'demo')?.status).to.include({ numberReady: 1 })
        expect(api.get('apps/v1', 'statefulsets', 'wl-db', 'demo')?.status).to.include({ readyReplicas: 1 })
      })

      it(`helm ${major} install ${wait} ${rollback} fails on its 5s timeout when the Deployment stays unready, and removes the install`, async () => {
        api.keepUnready({ kind: 'Deployment', name: 'wl-web' })
        const r = await install(rollback, '--timeout', '5s')
        expect(r.code).to.equal(1)
        expect(r.stderr).to.match(/context deadline exceeded/)
        expect(api.get('apps/v1', 'deployments', 'wl-web', 'demo')).to.equal(undefined)
        expect(api.list('apps/v1', 'replicasets', 'demo')).to.deep.equal([])
        expect(
          api.list('v1', 'secrets', 'demo').filter((s) => s.metadata.labels?.owner === 'helm'),
        ).to.deep.equal([])
        const list = await helm(major, 'list', '-n', 'demo', '-a', '-q')
        expect(list.stdout.trim()).to.equal('')
      })
    }
  })

  describe('a server that goes away and comes back', () => {
    it("goAway('refuse'): kubectl gets connection refused; comeBack(): it works again on the same URL", async () => {
      const url = api.url
      await api.goAway('refuse')
      const refused = await kubectl('get', 'namespaces', '--request-timeout=5s')
      expect(refused.code).to.equal(1)
      expect(refused.stderr).to.include('connection refused')
      await api.comeBack()
      expect(api.url).to.equal(url)
      await ok('get', 'namespaces')
      await api.goAway('refuse')
      await api.stop() // must not hang or throw with the listener already closed
    })

    it("goAway('hang'): kubectl with --request-timeout=2s fails; comeBack() answers again; stop() while hanging is clean", async () => {
      await api.goAway('hang')
      // slow by nature: kubectl retries discovery 5 times, each cut at 2s
      const hung = await kubectl('get', 'namespaces', '--request-timeout=2s')
      expect(hung.code).to.equal(1)
      expect(hung.stderr).to.match(/Client\.Timeout exceeded|context deadline exceeded/)
      await api.comeBack()
      await ok('get', 'namespaces')
      await api.goAway('hang')
      const pending = kubectl('get', 'namespaces', '--request-timeout=30s')
      await eventually('a hanging request', async () => (api.requests.length > 0 ? true : undefined), 10_000)
      await api.stop()
      expect((await pending).code).to.equal(1)
    })
  })
})

interface RawEvent {
  type: string
  object: KubeObject & { code?: number; reason?: string }
}

/** A watch over raw HTTPS, as client-go opens it: its events and when it ended. */
function openWatch(api: FakeApiServer, pathAndQuery: string) {
  const events: RawEvent[] = []
  let buffered = ''
  let close = () => {}
  const ended = new Promise<RawEvent[]>((resolve, reject) => {
    const req = https.get(
      `${api.url}${pathAndQuery}`,
      { ca: api.caPem, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
      (res) => {
        res.on('data', (d: Buffer) => {
          buffered += d.toString()
          const lines = buffered.split('\n')
          buffered = lines.pop() ?? ''
          for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as RawEvent)
        })
        res.on('end', () => resolve(events))
        res.on('error', () => resolve(events)) // the server going away ends the stream
        res.on('aborted', () => resolve(events))
      },
    )
    req.on('error', (err) => (req.destroyed ? resolve(events) : reject(err)))
    close = () => req.destroy()
  })
  return { events, ended, close: () => close() }
}

/** A watch that ends by itself (timeoutSeconds, or an ERROR): all its events. */
function rawWatch(api: FakeApiServer, pathAndQuery: string): Promise<RawEvent[]> {
  return openWatch(api, pathAndQuery).ended
}
