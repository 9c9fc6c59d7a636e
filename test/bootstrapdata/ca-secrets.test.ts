import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import {
  caSecretName,
  loadOrCreateCaSecrets,
  type CaSecretApi,
  type CaSecretOptions,
} from '../../src/lib/bootstrapdata/ca-secrets.js'
import { createCertificateAuthority, createServiceAccountKey } from '../../src/lib/bootstrapdata/certs.js'
import { kubeadmMode } from '../../src/lib/bootstrapdata/kubeadm-mode.js'
import { assignRoles } from '../../src/lib/bootstrapdata/orchestrate.js'
import { parseBootstrapObjects } from '../../src/lib/bootstrapdata/parse.js'
import type { KeyPair } from '../../src/lib/bootstrapdata/types.js'
import { chainMessage, hintOf } from '../../src/lib/errors/index.js'
import { openKubeApi, type KubeApi } from '../../src/lib/kube/index.js'
import { expect } from '../support/chai.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { type KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { FIXED_NOW, fixtureText, seededRandom } from './helpers.js'

const NS = 'team-a'
const CLUSTER = 'demo'
const OWNER = { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', name: CLUSTER, uid: 'uid-1234' }
const SUFFIXES = ['ca', 'etcd', 'proxy', 'sa']
const opts = (o: Partial<CaSecretOptions> = {}): CaSecretOptions => ({
  namespace: NS,
  cluster: CLUSTER,
  generate: true,
  now: FIXED_NOW,
  ...o,
})
const b64 = (s: string) => Buffer.from(s).toString('base64')
const unb64 = (s: unknown) => Buffer.from(String(s), 'base64').toString('utf8')

// The CA Secrets in a management cluster: FakeApiServer is a test double of the Kubernetes API,
// reached through the real @kubernetes/client-node client (openKubeApi).
describe('bootstrap data CA set as Cluster API Secrets (FakeApiServer, a test double of the Kubernetes API)', () => {
  let tmp: TempDir
  let server: FakeApiServer
  let kubeconfig: string
  let api: KubeApi
  beforeEach(async () => {
    tmp = await makeTempDir()
    server = await new FakeApiServer().start()
    kubeconfig = path.join(tmp.dir, 'management.conf')
    await writeFile(kubeconfig, server.kubeconfig(), { mode: 0o600 })
    api = await openKubeApi(kubeconfig)
  })
  afterEach(async () => {
    await server.stop()
    await tmp.cleanup()
  })

  const stored = (suffix: string) => server.get('v1', 'secrets', `${CLUSTER}-${suffix}`, NS)
  const writes = () => server.requests.filter((r) => r.method !== 'GET')
  /** Seeds a Secret as a user (or another generator) would have created it. */
  const seed = (suffix: string, data: Record<string, string>, extra: Partial<KubeObject> = {}) =>
    server.put('v1', 'secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${CLUSTER}-${suffix}`, namespace: NS },
      type: 'Opaque',
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
      ...extra,
    })
  const seedPair = (suffix: string, pair: KeyPair) =>
    seed(suffix, { 'tls.crt': pair.certPem, 'tls.key': pair.keyPem })
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('resolved'),
      (e: unknown) => e as Error,
    )
  /** Neither the message (with its causes) nor the hint repeats any line of a secret value. */
  const expectNoValues = (err: Error, values: string[]) => {
    const text = `${chainMessage(err)}\n${hintOf(err) ?? ''}\n${err.stack ?? ''}`
    for (const value of values)
      for (const line of value.split('\n').filter((l) => l.length > 16 && !l.startsWith('-----')))
        expect(text).not.to.contain(line)
  }

  it('generates the four Secrets when missing, in CAPI format, and reads the same set back without a write', async () => {
    const first = await loadOrCreateCaSecrets(api, opts({ owner: OWNER }))
    expect(first.created).to.deep.equal(SUFFIXES.map((s) => `${NS}/${CLUSTER}-${s}`))
    const versions: Record<string, string | undefined> = {}
    const pairs = {
      ca: first.authorities.ca,
      etcd: first.authorities.etcdCa,
      proxy: first.authorities.frontProxyCa,
      sa: first.authorities.sa,
    }
    for (const [suffix, pair] of Object.entries(pairs)) {
      const secret = stored(suffix)
      expect(secret, suffix).not.to.equal(undefined)
      expect(secret?.type).to.equal('cluster.x-k8s.io/secret')
      expect(secret?.metadata.labels).to.deep.equal({ 'cluster.x-k8s.io/cluster-name': CLUSTER })
      expect(secret?.metadata.ownerReferences).to.deep.equal([
        { ...OWNER, controller: true, blockOwnerDeletion: true },
      ])
      const data = secret?.data as Record<string, string>
      expect(Object.keys(data).sort()).to.deep.equal(['tls.crt', 'tls.key'])
      expect(unb64(data['tls.crt'])).to.equal(pair.certPem)
      expect(unb64(data['tls.key'])).to.equal(pair.keyPem)
      versions[suffix] = secret?.metadata.resourceVersion
    }
    const ca = new X509Certificate(first.authorities.ca.certPem)
    expect(ca.ca).to.equal(true)
    expect(ca.subject).to.equal('CN=kubernetes')
    expect(first.authorities.sa.certPem).to.match(/^-----BEGIN PUBLIC KEY-----/)
    expect(first.authorities.etcdCa.certPem).not.to.equal(first.authorities.ca.certPem)

    const writesBefore = writes().length
    for (const generate of [true, false]) {
      const again = await loadOrCreateCaSecrets(api, opts({ owner: OWNER, generate }))
      expect(again.created).to.deep.equal([])
      expect(again.authorities).to.deep.equal(first.authorities)
    }
    expect(writes()).to.have.length(writesBefore)
    for (const suffix of SUFFIXES) expect(stored(suffix)?.metadata.resourceVersion).to.equal(versions[suffix])
  })

  it('sets no ownerReference without an owner', async () => {
    await loadOrCreateCaSecrets(api, opts())
    for (const suffix of SUFFIXES) expect(stored(suffix)?.metadata.ownerReferences).to.equal(undefined)
  })

  it('keeps and uses a user-provided CA Secret, generating only the others', async () => {
    const mine = createCertificateAuthority(FIXED_NOW, 'my-own-ca')
    seedPair('ca', mine)
    const version = stored('ca')?.metadata.resourceVersion
    const got = await loadOrCreateCaSecrets(api, opts({ owner: OWNER }))
    expect(got.authorities.ca).to.deep.equal(mine)
    expect(new X509Certificate(got.authorities.ca.certPem).subject).to.equal('CN=my-own-ca')
    expect(got.created).to.deep.equal(['etcd', 'proxy', 'sa'].map((s) => `${NS}/${CLUSTER}-${s}`))
    const ca = stored('ca')
    expect(ca?.metadata.resourceVersion).to.equal(version)
    expect(ca?.metadata.ownerReferences).to.equal(undefined)
    expect(ca?.type).to.equal('Opaque')
    expect(writes().some((r) => JSON.stringify(r.body ?? '').includes(`"${CLUSTER}-ca"`))).to.equal(false)
  })

  it('join data: missing Secrets are an error naming each, and nothing is created', async () => {
    seedPair('ca', createCertificateAuthority(FIXED_NOW))
    seedPair('sa', createServiceAccountKey())
    const err = await failure(loadOrCreateCaSecrets(api, opts({ generate: false })))
    expect(err.message).to.contain(`Secrets ${NS}/${CLUSTER}-etcd, ${NS}/${CLUSTER}-proxy of Cluster "demo"`)
    expect(err.message).not.to.contain(`${CLUSTER}-ca,`)
    expect(hintOf(err)).to.contain("the init machine's data creates them; or create them as Cluster API does")
    expect(writes()).to.deep.equal([])
  })

  it('join data: a Secret without tls.key is an error naming the Secret and the key', async () => {
    const ca = createCertificateAuthority(FIXED_NOW)
    seedPair('ca', ca)
    seedPair('etcd', createCertificateAuthority(FIXED_NOW))
    seedPair('proxy', createCertificateAuthority(FIXED_NOW))
    seed('sa', { 'tls.crt': createServiceAccountKey().certPem })
    const err = await failure(loadOrCreateCaSecrets(api, opts({ generate: false })))
    expect(err.message).to.equal(`Secret ${NS}/${CLUSTER}-sa has no tls.key (or an empty one)`)
    expect(hintOf(err)).to.contain('create them as Cluster API does')
  })

  it('a Secret created by another generator between our read and our create (409): theirs is used', async () => {
    const theirs = createCertificateAuthority(FIXED_NOW, 'the-other-generator')
    let raced = false
    // The other generator writes right after our read of the -proxy Secret, deterministically.
    const racing: CaSecretApi = {
      getSecret: async (namespace, name) => {
        const got = await api.getSecret(namespace, name)
        if (name === caSecretName(CLUSTER, 'frontProxyCa') && !raced) {
          raced = true
          seedPair('proxy', theirs)
        }
        return got
      },
      createSecret: (secret) => api.createSecret(secret),
    }
    const version = () => stored('proxy')?.metadata.resourceVersion
    const got = await loadOrCreateCaSecrets(racing, opts({ owner: OWNER }))
    const theirVersion = version()
    expect(got.authorities.frontProxyCa).to.deep.equal(theirs)
    expect(got.created).to.deep.equal(['ca', 'etcd', 'sa'].map((s) => `${NS}/${CLUSTER}-${s}`))
    // we did try, got 409, and left theirs as it was
    const posts = writes().filter((r) => r.method === 'POST' && r.path.endsWith('/secrets'))
    expect(posts.map((r) => (r.body as KubeObject).metadata.name)).to.include(`${CLUSTER}-proxy`)
    expect(version()).to.equal(theirVersion)
    expect(unb64((stored('proxy')?.data as Record<string, string>)['tls.crt'])).to.equal(theirs.certPem)
    // and the next run reads the same set
    expect((await loadOrCreateCaSecrets(api, opts({ generate: false }))).authorities).to.deep.equal(
      got.authorities,
    )
  })

  describe('malformed Secrets: a clear error naming namespace/name and key, no value in it, nothing created', () => {
    const ca = createCertificateAuthority(FIXED_NOW)
    const other = createCertificateAuthority(FIXED_NOW)
    const sa = createServiceAccountKey()
    const otherSa = createServiceAccountKey()
    const cases: Record<string, { suffix: string; data: Record<string, string>; message: RegExp }> = {
      'tls.crt not PEM': {
        suffix: 'ca',
        data: { 'tls.crt': 'not a certificate at all, just some words', 'tls.key': ca.keyPem },
        message: /^tls\.crt of Secret team-a\/demo-ca is not a PEM certificate$/,
      },
      'tls.key not PEM': {
        suffix: 'etcd',
        data: { 'tls.crt': ca.certPem, 'tls.key': 'garbage-key-material-that-is-not-pem' },
        message: /^tls\.key of Secret team-a\/demo-etcd is not a PEM private key$/,
      },
      'a key that is not the certificate’s': {
        suffix: 'proxy',
        data: { 'tls.crt': ca.certPem, 'tls.key': other.keyPem },
        message:
          /^tls\.key of Secret team-a\/demo-proxy does not belong to tls\.crt of Secret team-a\/demo-proxy$/,
      },
      'SA tls.crt holding the private key, not the public key': {
        suffix: 'sa',
        data: { 'tls.crt': sa.keyPem, 'tls.key': sa.keyPem },
        message: /^tls\.crt of Secret team-a\/demo-sa is not one PEM public key/,
      },
      'SA tls.crt holding a certificate': {
        suffix: 'sa',
        data: { 'tls.crt': ca.certPem, 'tls.key': ca.keyPem },
        message: /^tls\.crt of Secret team-a\/demo-sa is not one PEM public key/,
      },
      'SA public key of another key pair': {
        suffix: 'sa',
        data: { 'tls.crt': otherSa.certPem, 'tls.key': sa.keyPem },
        message: /^tls\.key of Secret team-a\/demo-sa does not belong to tls\.crt of Secret team-a\/demo-sa$/,
      },
    }
    for (const [name, c] of Object.entries(cases))
      it(name, async () => {
        seed(c.suffix, c.data)
        const err = await failure(loadOrCreateCaSecrets(api, opts({ owner: OWNER })))
        expect(err.message).to.match(c.message)
        expectNoValues(err, [...Object.values(c.data), ca.keyPem, sa.keyPem, other.keyPem])
        expect(writes()).to.deep.equal([])
      })
  })

  describe('kubeadm mode with a management cluster', () => {
    const setup = async (ready: boolean) => {
      const text = (await fixtureText(ready)).replaceAll('namespace: default', `namespace: ${NS}`)
      const objects = parseBootstrapObjects(text, 'cluster.yaml')
      const { assignments } = assignRoles(objects, {})
      const modeOpts = {
        caDir: path.join(tmp.dir, 'pki'),
        outDir: path.join(tmp.dir, 'out'),
        tokenTtlMs: 3_600_000,
        managementKubeconfig: kubeconfig,
      }
      const opened: string[] = []
      const deps = {
        now: () => FIXED_NOW,
        randomBytes: seededRandom('ca-secrets'),
        managementApi: async (file: string) => {
          opened.push(file)
          return openKubeApi(file)
        },
      }
      return { run: () => kubeadmMode(modeOpts, deps, objects, assignments), opened, assignments }
    }

    it('init data: the CAs come from the Cluster’s Secrets (created there), not from --ca-dir', async () => {
      const init = await setup(false)
      expect(init.assignments.some((a) => a.role === 'init')).to.equal(true)
      const mode = await init.run()
      expect(init.opened).to.deep.equal([kubeconfig])
      expect(mode.ca).to.equal(undefined)
      expect(mode.caSecrets).to.deep.equal({
        namespace: NS,
        cluster: CLUSTER,
        created: SUFFIXES.map((s) => `${NS}/${CLUSTER}-${s}`),
      })
      expect(mode.files.map((f) => path.basename(f.file))).not.to.include('ca.key')
      const plan = mode.planFor(init.assignments.find((a) => a.role === 'init') ?? expect.fail('no init'))
      const caFile = plan.files.find((f) => f.path.endsWith('/ca.crt'))
      expect(caFile?.content).to.equal(unb64((stored('ca')?.data as Record<string, string>)['tls.crt']))
    })

    it('join data: uses the Secrets, and refuses when they are missing', async () => {
      const join = await setup(true)
      const err = await failure(join.run())
      expect(err.message).to.contain(`${NS}/${CLUSTER}-ca, ${NS}/${CLUSTER}-etcd`)
      await loadOrCreateCaSecrets(api, opts())
      const mode = await join.run()
      expect(mode.caSecrets?.created).to.deep.equal([])
    })
  })
})
