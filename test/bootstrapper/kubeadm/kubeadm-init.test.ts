import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { KUBEADM_FAKE } from '../../support/kubeadm-fake.js'
import { X509Certificate } from 'node:crypto'
import { parseAllDocuments, parse } from 'yaml'
import { expect } from '../../support/chai.js'
import { makeTempDir } from '../../support/temp.js'
import { spyingRunner } from '../../support/runner.js'
import { kubeadmApiVersion } from '../../../src/lib/versions/index.js'
import { runKubeadmInit } from '../../../src/lib/bootstrapper/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { runProcess } from '../../../src/lib/system/process.js'
import {
  renderKubeadmInitConfig,
  skippedInitPhases,
  kubeadmPaths,
  type KubeadmInitInput,
} from '../../../src/lib/bootstrapper/kubeadm/kubeadm-config.js'
import { silentLogger } from '../../../src/lib/system/logger.js'

function input(root: string, version: string, conformance = false): KubeadmInitInput {
  return {
    kubernetesVersion: version,
    clusterName: 'constell',
    nodeName: 'cp-0',
    nodeIP: '10.0.0.2',
    controlPlaneEndpoint: '10.0.0.100',
    certSANs: ['my.example', ''],
    serviceCIDR: '10.96.0.0/12',
    conformance,
    paths: kubeadmPaths(nodePaths(root)),
  }
}

describe('kubeadm', () => {
  let root: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir: root, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  describe('config per version', () => {
    const cases: Record<string, { version: string; apiVersion: string; listArgs: boolean; gate: boolean }> = {
      '1.30 → v1beta3 with map extraArgs': {
        version: 'v1.30.14',
        apiVersion: 'kubeadm.k8s.io/v1beta3',
        listArgs: false,
        gate: false,
      },
      '1.31 → v1beta4 with list extraArgs': {
        version: 'v1.31.13',
        apiVersion: 'kubeadm.k8s.io/v1beta4',
        listArgs: true,
        gate: true,
      },
      '1.32 → v1beta4': {
        version: 'v1.32.9',
        apiVersion: 'kubeadm.k8s.io/v1beta4',
        listArgs: true,
        gate: true,
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        const docs = parseAllDocuments(renderKubeadmInitConfig(input(root, tc.version))).map(
          (d) => d.toJS() as Record<string, never>,
        )
        expect(docs.map((d) => d.kind)).to.deep.equal([
          'InitConfiguration',
          'ClusterConfiguration',
          'KubeletConfiguration',
        ])
        expect(docs.map((d) => d.apiVersion)).to.deep.equal([
          tc.apiVersion,
          tc.apiVersion,
          'kubelet.config.k8s.io/v1beta1',
        ])
        const cluster = docs[1] as unknown as {
          apiServer: { certSANs: string[]; extraArgs: unknown }
          featureGates?: Record<string, boolean>
          certificatesDir: string
        }
        expect(Array.isArray(cluster.apiServer.extraArgs)).to.equal(tc.listArgs)
        expect(cluster.apiServer.certSANs).to.deep.equal(['127.0.0.1', '10.0.0.2', 'my.example'])
        expect(cluster.featureGates?.ControlPlaneKubeletLocalMode === true).to.equal(tc.gate)
        expect(cluster.certificatesDir).to.equal(path.join(root, 'etc/kubernetes/pki'))
        expect(kubeadmApiVersion(tc.version)).to.equal(tc.apiVersion)
      })
    }
    it('skips kube-proxy unless in conformance mode', () => {
      expect(skippedInitPhases(false)).to.deep.equal([
        'preflight',
        'certs',
        'addon/coredns',
        'addon/kube-proxy',
      ])
      expect(skippedInitPhases(true)).to.deep.equal(['preflight', 'certs', 'addon/coredns'])
    })
  })

  describe('runner against the kubeadm contract fake', () => {
    const run = (version: string, env: NodeJS.ProcessEnv = {}) => {
      const output: string[] = []
      const spyArgv: string[][] = []
      const runner = spyingRunner((file, args) => void spyArgv.push([file, ...args]), env)
      const result = runKubeadmInit(input(root, version), {
        runner,
        kubeadm: KUBEADM_FAKE,
        paths: nodePaths(root),
        recordOutput: (t) => output.push(t),
        log: silentLogger,
      })
      return { result, output, spyArgv }
    }
    for (const version of ['v1.30.14', 'v1.31.13']) {
      it(`initializes ${version}: real PKI, admin.conf, manifests, admin kubeconfig`, async () => {
        await mkdir(path.join(root, 'etc/kubernetes/manifests'), { recursive: true })
        await writeFile(path.join(root, 'etc/kubernetes/manifests/stale.yaml'), 'old')
        const { result, output, spyArgv } = run(version)
        const kubeconfig = parse((await result).toString()) as {
          clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>
          users: Array<{ user: { 'client-certificate-data': string } }>
        }
        const ca = new X509Certificate(await readFile(path.join(root, 'etc/kubernetes/pki/ca.crt')))
        const client = new X509Certificate(
          Buffer.from(kubeconfig.users[0]?.user['client-certificate-data'] ?? '', 'base64'),
        )
        expect(client.verify(ca.publicKey)).to.equal(true)
        expect(client.subject).to.include('CN=constell-admin').and.include('O=system:masters')
        expect(kubeconfig.clusters[0]?.cluster.server).to.equal('https://10.0.0.100:6443')
        expect(await readdir(path.join(root, 'etc/kubernetes'))).to.include.members([
          'admin.conf',
          'audit-policy.yaml',
          'pki',
        ])
        expect((await readdir(path.join(root, 'etc/kubernetes/manifests'))).sort()).to.deep.equal([
          'etcd.yaml',
          'kube-apiserver.yaml',
          'kube-controller-manager.yaml',
          'kube-scheduler.yaml',
        ])
        expect(spyArgv.map((a) => a.slice(1, 3).join(' '))).to.deep.equal([
          'init phase',
          'init phase',
          'init -v=5',
          'kubeconfig user',
        ])
        expect(output.join('')).to.include('Your Kubernetes control-plane has initialized successfully!')
        expect(output.join(''), 'the admin key stays out of the log').not.to.include('client-key-data')
        const kubelet = new X509Certificate(await readFile(nodePaths(root).kubeletClientCert))
        expect(kubelet.verify(ca.publicKey)).to.equal(true)
        expect(kubelet.subject).to.include('CN=system:node:cp-0')
        expect(kubelet.subjectAltName).to.include('DNS:cp-0').and.include('IP Address:10.0.0.2')
        expect((await stat(nodePaths(root).kubeletClientKey)).mode & 0o777).to.equal(0o600)
      })
    }
    it('records kubeadm output of a failing phase and names the step', async () => {
      const { result, output } = run('v1.31.13', { KUBEADM_FAKE_FAIL: 'preflight' })
      const err = await result.catch((e: unknown) => e)
      expect(String(err)).to.include('kubeadm preflight')
      expect(output.join('')).to.include('[ERROR CRI]')
    })
    it('the fake refuses a config whose apiVersion does not match the Kubernetes version', async () => {
      const file = path.join(root, 'bad.yaml')
      await writeFile(
        file,
        renderKubeadmInitConfig(input(root, 'v1.31.13')).replaceAll(
          'kubernetesVersion: v1.31.13',
          'kubernetesVersion: v1.30.14',
        ),
      )
      const res = await runProcess(KUBEADM_FAKE, ['init', 'phase', 'preflight', '-v=5', '--config', file])
      expect(res.code).to.equal(1)
      expect(res.stderr).to.match(/apiVersion kubeadm.k8s.io\/v1beta4 is not what Kubernetes v1.30.14 takes/)
    })
  })
})
