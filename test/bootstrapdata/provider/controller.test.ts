/**
 * `bootstrap-data controller` as a Cluster API bootstrap provider, with its production wiring against
 * two Kubernetes API contract fakes (TEST DOUBLES): the management cluster holding CAPI's CRDs and
 * objects, and the workload cluster the `<cluster>-kubeconfig` Secret points at. The test plays CAPI
 * core and the infrastructure provider (infrastructureReady, ControlPlaneInitialized, nodeRefs).
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../../support/chai.js'
import { type FakeApiServer } from '../../../src/lib/simulator/index.js'
import { startFakeApiServer, type KubeObject } from '../../../src/lib/simulator/fake-apiserver.js'
import { readableIgnition } from '../readable-ignition.js'
import { validateUserData } from '../helpers.js'
import { makeTempDir, type TempDir } from '../../support/temp.js'
import {
  BOOTSTRAP,
  bootstrap,
  CLUSTER,
  type CapiVersion,
  installCapiCrds,
  NS,
  seedCluster,
  setClusterStatus,
  setMachineNodeRef,
} from '../../support/capi-objects.js'
import { createBootstrapProvider, type ProviderSettings } from '../../../src/wiring/bootstrap-provider.js'
import { createLogger } from '../../../src/lib/system/index.js'
import type { BootstrapController } from '../../../src/lib/bootstrapdata/index.js'

const TTL_MS = 15 * 60_000

/** Retries an assertion every 50 ms until it holds (the controller works in the background). */
async function until(assertion: () => void, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return assertion()
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}
const decode = (v: unknown) => Buffer.from(String(v), 'base64').toString('utf8')

interface World {
  management: FakeApiServer
  workload: FakeApiServer
  temp: TempDir
  kubeconfig: string
  /** Added to the controller's clock: tokens age without waiting. */
  offsetMs: number
  logs: string[]
  running: BootstrapController[]
}

async function world(version: CapiVersion = 'v1beta1'): Promise<World> {
  const [management, workload, temp] = await Promise.all([
    startFakeApiServer(),
    startFakeApiServer(),
    makeTempDir('constell-provider-'),
  ])
  installCapiCrds(management)
  seedCluster(management, workload.kubeconfig(), undefined, version)
  const kubeconfig = path.join(temp.dir, 'management.kubeconfig')
  await writeFile(kubeconfig, management.kubeconfig(), { mode: 0o600 })
  return { management, workload, temp, kubeconfig, offsetMs: 0, logs: [], running: [] }
}

async function startController(w: World, identity: string, extra: Partial<ProviderSettings> = {}) {
  const controller = await createBootstrapProvider(
    {
      kubeconfig: w.kubeconfig,
      apiVersion: 'v1beta1',
      tokenTtlMs: TTL_MS,
      resyncMs: 200,
      renewMs: 200,
      leaseDurationMs: 3000,
      rewatchMs: 100,
      leaseNamespace: NS,
      leaseName: 'bootstrap-provider',
      identity,
      clock: () => new Date(Date.now() + w.offsetMs),
      ...extra,
    },
    createLogger({ format: 'json', write: (line) => w.logs.push(line) }),
  )
  await controller.start()
  w.running.push(controller)
  return controller
}

/** As CAPI core would see it: infrastructure ready, cp-0 initialized, then everyone joins. */
async function bringUp(w: World): Promise<BootstrapController> {
  setClusterStatus(w.management, { infrastructureReady: true })
  const controller = await startController(w, 'a')
  await until(() => expect(status(w, 'cp-0')).to.include({ ready: true }))
  setClusterStatus(w.management, { conditions: [{ type: 'ControlPlaneInitialized', status: 'True' }] })
  for (const name of ['cp-1', 'worker-0'])
    await until(() => expect(status(w, name)).to.include({ ready: true }))
  return controller
}

const config = (w: World, name: string) =>
  w.management.get(BOOTSTRAP, 'kubeadmconfigs', name, NS) as KubeObject
const status = (w: World, name: string) => (config(w, name).status ?? {}) as Record<string, unknown>
const condition = (w: World, name: string, type: string) =>
  ((status(w, name).conditions ?? []) as Array<Record<string, string>>).find((c) => c.type === type)
const dataSecret = (w: World, name: string) => w.management.get('v1', 'secrets', name, NS)
const tokenSecrets = (w: World) =>
  w.workload
    .list('v1', 'secrets', 'kube-system')
    .filter((s) => s.metadata.name.startsWith('bootstrap-token-'))

describe('bootstrap-data controller (CAPI bootstrap provider against the API contract fake)', function () {
  this.timeout(60_000)
  let w: World

  beforeEach(async () => {
    w = await world()
  })
  afterEach(async () => {
    await Promise.all(w.running.map((c) => c.stop()))
    await Promise.all([w.management.stop(), w.workload.stop()])
    await w.temp.cleanup()
  })

  it('waits for the infrastructure, inits exactly one control plane, joins the rest once it is up', async () => {
    await startController(w, 'a')
    await until(() =>
      expect(condition(w, 'cp-0', 'DataSecretAvailable')).to.include({
        status: 'False',
        reason: 'WaitingForClusterInfrastructure',
      }),
    )
    expect(dataSecret(w, 'cp-0')).to.equal(undefined)

    setClusterStatus(w.management, { infrastructureReady: true })
    await until(() => expect(status(w, 'cp-0')).to.include({ ready: true, dataSecretName: 'cp-0' }))
    const init = dataSecret(w, 'cp-0') as KubeObject & { data: Record<string, string>; type: string }
    expect(init.type).to.equal('cluster.x-k8s.io/secret')
    expect(init.metadata.labels).to.deep.equal({ 'cluster.x-k8s.io/cluster-name': CLUSTER })
    expect((init.metadata.ownerReferences as object[])[0]).to.include({
      kind: 'KubeadmConfig',
      name: 'cp-0',
      controller: true,
    })
    expect(decode(init.data.format)).to.equal('cloud-config')
    const initDoc = decode(init.data.value)
    expect(initDoc).to.match(/^## template: jinja\n#cloud-config|^#cloud-config/)
    expect(initDoc).to.include('kubeadm init').and.include('name: node-labels').and.include('value: tier=cp')
    for (const ca of ['ca', 'etcd', 'proxy', 'sa'])
      expect(w.management.get('v1', 'secrets', `${CLUSTER}-${ca}`, NS), ca).to.not.equal(undefined)
    const lock = w.management.get('v1', 'configmaps', `${CLUSTER}-lock`, NS) as KubeObject & {
      data: Record<string, string>
    }
    expect(JSON.parse(lock.data['lock-information'] ?? '')).to.deep.equal({ machineName: 'cp-0' })
    // cp-1 only joins, and the worker waits too: no data before the control plane is up
    for (const name of ['cp-1', 'worker-0']) {
      // the same pass reaches them after cp-0
      await until(() =>
        expect(condition(w, name, 'DataSecretAvailable')).to.include({
          reason: 'WaitingForControlPlaneAvailable',
        }),
      )
      expect(dataSecret(w, name), name).to.equal(undefined)
    }
    expect(tokenSecrets(w)).to.have.length(0)

    setClusterStatus(w.management, { conditions: [{ type: 'ControlPlaneInitialized', status: 'True' }] })
    await until(() => {
      expect(status(w, 'cp-1')).to.include({ ready: true })
      expect(status(w, 'worker-0')).to.include({ ready: true })
    })
    expect(w.management.get('v1', 'configmaps', `${CLUSTER}-lock`, NS), 'lock released').to.equal(undefined)
    const tokens = tokenSecrets(w)
    expect(tokens).to.have.length(2)
    const worker = dataSecret(w, 'worker-0') as KubeObject & { data: Record<string, string> }
    expect(decode(worker.data.format)).to.equal('ignition')
    const ignition = JSON.parse(decode(worker.data.value)) as { ignition: { version: string } }
    expect(ignition.ignition.version).to.match(/^3\./)
    const tokenId = worker.metadata.annotations?.['bootstrap.constellation.dev/token-id']
    const token = tokens.find((t) => t.metadata.name === `bootstrap-token-${tokenId}`) as KubeObject & {
      data: Record<string, string>
    }
    expect(token, 'the worker token is registered in the workload cluster').to.not.equal(undefined)
    const expires = Date.parse(decode(token.data.expiration))
    expect(expires - Date.now()).to.be.within(TTL_MS - 60_000, TTL_MS + 60_000)
    expect(readableIgnition(decode(worker.data.value))).to.include(
      `${decode(token.data['token-id'])}.${decode(token.data['token-secret'])}`,
    )
    expect(condition(w, 'worker-0', 'Ready')).to.include({ status: 'True' })
  })

  it('is idempotent across restarts: nothing is written again, no second token', async () => {
    const first = await bringUp(w)
    await first.stop()
    const versions = () =>
      Object.fromEntries(
        ['cp-0', 'cp-1', 'worker-0'].flatMap((n) => [
          [`secret/${n}`, dataSecret(w, n)?.metadata.resourceVersion],
          [`config/${n}`, config(w, n).metadata.resourceVersion],
        ]),
      )
    const before = versions()
    const tokensBefore = tokenSecrets(w).map((t) => t.metadata.name)
    await startController(w, 'b')
    await until(() => expect(w.logs.join('\n')).to.include('"identity":"b"'))
    await new Promise((r) => setTimeout(r, 600)) // a few resync passes
    expect(versions()).to.deep.equal(before)
    expect(tokenSecrets(w).map((t) => t.metadata.name)).to.deep.equal(tokensBefore)
  })

  it('adopts a data Secret it wrote before a crash, before its status was written', async () => {
    setClusterStatus(w.management, { infrastructureReady: true })
    const uid = config(w, 'cp-0').metadata.uid
    w.management.put('v1', 'secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'cp-0',
        namespace: NS,
        ownerReferences: [
          { apiVersion: BOOTSTRAP, kind: 'KubeadmConfig', name: 'cp-0', uid, controller: true },
        ],
      },
      data: { value: Buffer.from('#cloud-config\n').toString('base64') },
    })
    await startController(w, 'a')
    await until(() => expect(status(w, 'cp-0')).to.include({ ready: true, dataSecretName: 'cp-0' }))
    expect(
      decode((dataSecret(w, 'cp-0') as KubeObject & { data: Record<string, string> }).data.value),
    ).to.equal('#cloud-config\n')
  })

  it('refreshes the token of a machine still booting, and stops once it joined', async () => {
    await bringUp(w)
    const id = dataSecret(w, 'worker-0')?.metadata.annotations?.['bootstrap.constellation.dev/token-id']
    const expiration = () =>
      Date.parse(
        decode(
          (
            w.workload.get('v1', 'secrets', `bootstrap-token-${id}`, 'kube-system') as KubeObject & {
              data: Record<string, string>
            }
          ).data.expiration,
        ),
      )
    const first = expiration()
    w.offsetMs = 5 * 60_000 // less than 5/6 of the TTL left
    await until(() => expect(expiration()).to.be.above(first + 4 * 60_000))
    setMachineNodeRef(w.management, 'worker-0')
    await new Promise((r) => setTimeout(r, 400))
    const joined = expiration()
    w.offsetMs = 12 * 60_000
    await new Promise((r) => setTimeout(r, 600))
    expect(expiration(), 'no refresh after the node joined').to.equal(joined)
  })

  it('issues a new token and re-renders the data when the old one was already removed', async () => {
    await bringUp(w)
    const annotation = () =>
      dataSecret(w, 'worker-0')?.metadata.annotations?.['bootstrap.constellation.dev/token-id'] as string
    const old = annotation()
    await w.workload.stop() // the token cleaner ran: the Secret is gone (a fresh workload API without it)
    const replacement = await startFakeApiServer()
    try {
      w.management.put('v1', 'secrets', {
        ...(w.management.get('v1', 'secrets', `${CLUSTER}-kubeconfig`, NS) as KubeObject),
        data: { value: Buffer.from(replacement.kubeconfig()).toString('base64') },
      })
      await until(() => expect(annotation()).to.not.equal(old))
      const fresh = annotation()
      expect(replacement.get('v1', 'secrets', `bootstrap-token-${fresh}`, 'kube-system')).to.not.equal(
        undefined,
      )
      const value = decode(
        (dataSecret(w, 'worker-0') as KubeObject & { data: Record<string, string> }).data.value,
      )
      expect(readableIgnition(value)).to.include(`${fresh}.`).and.not.include(`${old}.`)
    } finally {
      await Promise.all(w.running.map((c) => c.stop()))
      w.running = []
      await replacement.stop()
    }
  })

  it('two replicas: one leads; when it stops the other takes over', async () => {
    setClusterStatus(w.management, { infrastructureReady: true })
    const a = await startController(w, 'a')
    await until(() => expect(status(w, 'cp-0')).to.include({ ready: true }))
    await startController(w, 'b')
    await new Promise((r) => setTimeout(r, 500))
    expect(w.logs.filter((l) => l.includes('leading')).map((l) => JSON.parse(l).identity)).to.deep.equal([
      'a',
    ])
    await a.stop()
    await until(() =>
      expect(w.logs.filter((l) => l.includes('leading')).map((l) => JSON.parse(l).identity)).to.deep.equal([
        'a',
        'b',
      ]),
    )
    setClusterStatus(w.management, { conditions: [{ type: 'ControlPlaneInitialized', status: 'True' }] })
    await until(() => expect(status(w, 'worker-0')).to.include({ ready: true }))
  })

  it('a leader that cannot renew its Lease within the duration stops with an error', async () => {
    const controller = await startController(w, 'a')
    await until(() => expect(w.logs.join('\n')).to.include('leading'))
    w.management.failOn({ method: 'PUT', pathIncludes: '/leases/', status: 500, times: 1000 })
    const err = await controller.done.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(String(err)).to.match(/lost the leader Lease/)
  })

  it('speaks v1beta2: initialization.dataSecretCreated and metav1 conditions', async () => {
    const v2 = await world('v1beta2')
    try {
      await startController(v2, 'a', { apiVersion: 'v1beta2' })
      const get = (name: string) =>
        (v2.management.get(bootstrap('v1beta2'), 'kubeadmconfigs', name, NS)?.status ?? {}) as Record<
          string,
          unknown
        >
      await until(
        () =>
          expect(JSON.stringify(get('cp-0')), JSON.stringify(get('cp-0'))).to.include(
            'WaitingForClusterInfrastructure',
          ),
        5000,
      )
      setClusterStatus(v2.management, { initialization: { infrastructureProvisioned: true } }, 'v1beta2')
      await until(() => expect(get('cp-0')).to.deep.include({ initialization: { dataSecretCreated: true } }))
      expect(get('cp-0').dataSecretName).to.equal('cp-0')
      expect(get('cp-0')).to.not.have.property('ready')
      const ready = (get('cp-0').conditions as Array<Record<string, unknown>>).find((c) => c.type === 'Ready')
      expect(ready).to.include({ status: 'True', reason: 'Ready', observedGeneration: 1 })
    } finally {
      await Promise.all(v2.running.map((c) => c.stop()))
      await Promise.all([v2.management.stop(), v2.workload.stop()])
      await v2.temp.cleanup()
    }
  })

  it('a spec the renderer refuses is reported on the config, naming the field', async () => {
    setClusterStatus(w.management, { infrastructureReady: true })
    const cp = config(w, 'cp-0')
    w.management.put(BOOTSTRAP, 'kubeadmconfigs', {
      ...cp,
      spec: { ...(cp.spec as object), files: [{ path: 'relative/path', content: 'x' }] },
    })
    await startController(w, 'a')
    await until(() =>
      expect(condition(w, 'cp-0', 'DataSecretAvailable')).to.include({
        status: 'False',
        reason: 'DataSecretGenerationFailed',
      }),
    )
    expect(condition(w, 'cp-0', 'DataSecretAvailable')?.message).to.include('files')
    expect(dataSecret(w, 'cp-0')).to.equal(undefined)
  })

  it('a contentFrom Secret missing from the management cluster is named on the config', async () => {
    setClusterStatus(w.management, { infrastructureReady: true })
    const cp = config(w, 'cp-0')
    w.management.put(BOOTSTRAP, 'kubeadmconfigs', {
      ...cp,
      spec: {
        ...(cp.spec as object),
        files: [{ path: '/etc/token', contentFrom: { secret: { name: 'registry', key: 'token' } } }],
      },
    })
    await startController(w, 'a')
    await until(() =>
      expect(condition(w, 'cp-0', 'DataSecretAvailable')?.message).to.include(
        `the Secrets ${NS}/registry that spec.files[].contentFrom`,
      ),
    )
    w.management.put('v1', 'secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'registry', namespace: NS },
      data: { token: Buffer.from('registry-token').toString('base64') },
    })
    w.management.put(BOOTSTRAP, 'kubeadmconfigs', config(w, 'cp-0')) // any change reconciles it again
    await until(() => expect(status(w, 'cp-0')).to.include({ ready: true }))
    expect(
      decode((dataSecret(w, 'cp-0') as KubeObject & { data: Record<string, string> }).data.value),
    ).to.include('registry-token')
  })

  it('every data Secret passes cloud-init schema or ignition-validate, as its format says', async () => {
    await bringUp(w)
    const formats: Record<string, string> = {}
    for (const name of ['cp-0', 'cp-1', 'worker-0']) {
      const data = (dataSecret(w, name) as KubeObject & { data: Record<string, string> }).data
      formats[name] = decode(data.format)
      await validateUserData(decode(data.value))
    }
    expect(formats).to.deep.equal({ 'cp-0': 'cloud-config', 'cp-1': 'cloud-config', 'worker-0': 'ignition' })
  })
})
