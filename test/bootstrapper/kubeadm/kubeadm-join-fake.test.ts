/**
 * The kubeadm contract fake's `join`: it takes the JoinConfiguration we render, for each version
 * and role, and refuses what a real `kubeadm join` refuses (a token never issued, expired or with
 * another secret, a CA pin that does not match, a control plane without the shared PKI, a
 * malformed config), with kubeadm's words. runKubeadmJoin then runs against it.
 */
import { readFile, readdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../../support/chai.js'
import { makeTempDir } from '../../support/temp.js'
import { FakeKubeApiDir } from '../../support/fake-kube-api-dir.js'
import { spyingRunner } from '../../support/runner.js'
import { KUBEADM_FAKE } from '../../support/kubeadm-fake.js'
import { runKubeadmJoin } from '../../../src/lib/bootstrapper/index.js'
import type { ClusterCa } from '../../../src/lib/joinservice/cluster-ca.js'
import { createTokenIssuer } from '../../../src/lib/kube/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { writeFileAtomic } from '../../../src/lib/system/index.js'
import { runProcess } from '../../../src/lib/system/process.js'
import { makeClusterCa } from '../../joinservice/fakes.js'
import { silentLogger } from '../../../src/lib/system/logger.js'
import { renderKubeadmJoinConfig } from '../../../src/lib/bootstrapper/kubeadm/kubeadm-join-config.js'

const API_SERVER = '10.0.0.1:6443'
const NEVER_ISSUED = 'zzzzzz.zzzzzzzzzzzzzzzz'

interface JoinCase {
  controlPlane?: boolean
  /** kubeadm's own version (KUBEADM_FAKE_VERSION); the config follows it unless `configVersion`. */
  version?: string
  configVersion?: string
  /** Changes the world before the join. */
  arrange?: (w: World) => Promise<void>
  /** Changes the rendered config text. */
  edit?: (yaml: string) => string
  token?: (issued: string) => string
  extraArgs?: string[]
  env?: NodeJS.ProcessEnv
  want: { ok: true } | { error: RegExp }
}

interface World {
  root: string
  api: FakeKubeApiDir
  ca: ClusterCa
  token: string
}

let ca: ClusterCa
let otherCa: ClusterCa
before(async () => {
  ca = await makeClusterCa()
  otherCa = await makeClusterCa()
})

const writeSharedPki = (w: World) =>
  Promise.all(
    w.ca.controlPlaneFiles.map((f) =>
      writeFileAtomic(path.join(nodePaths(w.root).kubernetesPki, f.name), f.data),
    ),
  ).then(() => undefined)

describe('kubeadm contract fake: join', function () {
  this.timeout(20_000)
  let dir: string
  let cleanup: () => Promise<void>
  let world: World
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    const api = new FakeKubeApiDir(path.join(dir, 'api'))
    await api.publishClusterInfo(ca.caCertPem, API_SERVER)
    const token = await createTokenIssuer(api.registrar, () => new Date()).issue()
    world = { root: path.join(dir, 'root'), api, ca, token }
  })
  afterEach(() => cleanup())

  async function join(tc: JoinCase) {
    await tc.arrange?.(world)
    const paths = nodePaths(world.root)
    const version = tc.version ?? 'v1.31.13'
    const yaml = renderKubeadmJoinConfig({
      nodeName: 'node-1',
      nodeIP: '10.0.0.5',
      apiServerEndpoint: API_SERVER,
      token: tc.token?.(world.token) ?? world.token,
      caCertHash: world.ca.caCertHash,
      controlPlane: tc.controlPlane ?? false,
      kubernetesVersion: tc.configVersion ?? version,
      paths: { caCertPath: path.join(paths.kubernetesPki, 'ca.crt'), patchesDir: paths.kubeadmPatchDir },
    })
    const config = path.join(dir, 'join.yaml')
    await writeFileAtomic(config, tc.edit?.(yaml) ?? yaml)
    return runProcess(
      process.execPath,
      [KUBEADM_FAKE, 'join', '-v=5', ...(tc.extraArgs ?? []), '--config', config],
      {
        env: {
          ...process.env,
          KUBEADM_FAKE_API_DIR: world.api.dir,
          KUBEADM_FAKE_VERSION: version,
          ...tc.env,
        },
      },
    )
  }

  const cases: Record<string, JoinCase> = {
    'a worker with an issued token and the right pin joins (1.31, v1beta4)': { want: { ok: true } },
    'a worker on 1.30 (v1beta3) joins': { version: 'v1.30.14', want: { ok: true } },
    'a control plane holding the shared PKI joins': {
      controlPlane: true,
      arrange: writeSharedPki,
      want: { ok: true },
    },
    'a control plane without the shared PKI is refused': {
      controlPlane: true,
      want: {
        error:
          /control-plane-prepare\/certs: One or more conditions for hosting a new control plane instance is not satisfied/,
      },
    },
    "a control plane whose ca.crt is another cluster's is refused": {
      controlPlane: true,
      arrange: (w) => writeSharedPki({ ...w, ca: otherCa }),
      want: { error: /ca\.crt is not the CA of the cluster in cluster-info/ },
    },
    'a token never issued is refused': {
      token: () => NEVER_ISSUED,
      want: { error: /This token id "zzzzzz" is invalid for this cluster, can't connect/ },
    },
    'an expired token is refused': {
      arrange: (w) => w.api.editToken(w.token.slice(0, 6), { expiration: '2020-01-01T00:00:00Z' }),
      want: {
        error:
          /is invalid for this cluster, can't connect\n\[fake\] bootstrap token \w+ expired at 2020-01-01T00:00:00Z/,
      },
    },
    'a token with another secret is refused': {
      token: (issued) => `${issued.slice(0, 6)}.${'0'.repeat(16)}`,
      want: { error: /failed to verify JWS signature of received cluster info object/ },
    },
    'a CA pin that does not match is refused': {
      arrange: async (w) => void (w.ca = otherCa),
      want: {
        error:
          /cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "sha256:[0-9a-f]{64}" are pinned/,
      },
    },
    'v1beta3 to a 1.31 kubeadm is refused': {
      configVersion: 'v1.30.14',
      want: { error: /apiVersion kubeadm\.k8s\.io\/v1beta3 is not what kubeadm v1\.31\.13 takes/ },
    },
    'an unknown field is refused (strict decoding)': {
      edit: (y) => y.replace('caCertPath:', 'certificateKey: abc\ncaCertPath:'),
      want: { error: /unknown field "certificateKey" \(in JoinConfiguration\)/ },
    },
    'no CA pin is refused as unsafe': {
      edit: (y) =>
        y
          .split('\n')
          .filter((line) => !/caCertHashes:|- sha256:/.test(line))
          .join('\n'),
      want: { error: /using token-based discovery without caCertHashes can be unsafe/ },
    },
    'the token on the command line is refused': {
      extraArgs: ['--token', 'abcdef.0123456789abcdef'],
      want: { error: /unknown flag: --token/ },
    },
    'a node name that is not RFC 1123 is refused': {
      edit: (y) => y.replace('name: node-1', 'name: Node_1'),
      want: { error: /nodeRegistration\.name: Invalid value: "Node_1"/ },
    },
    'no API server to discover': {
      env: { KUBEADM_FAKE_API_DIR: '' },
      want: { error: /connect: connection refused/ },
    },
    'a failing kubelet-start (KUBEADM_FAKE_FAIL=join)': {
      env: { KUBEADM_FAKE_FAIL: 'join' },
      want: { error: /error execution phase kubelet-start/ },
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const res = await join(tc)
      if ('ok' in tc.want) {
        expect(res.code, res.stderr).to.equal(0)
        expect(res.stdout).to.include('This node has joined the cluster')
        expect(await world.api.nodes()).to.deep.equal([
          {
            name: 'node-1',
            labels: tc.controlPlane ? { 'node-role.kubernetes.io/control-plane': '' } : {},
          },
        ])
      } else {
        expect(res.code).to.equal(1)
        expect(res.stderr, res.stderr).to.match(tc.want.error)
        expect(await world.api.nodes(), 'nothing joined').to.deep.equal([])
      }
    })

  it('a node name that joined already is refused', async () => {
    expect((await join({ want: { ok: true } })).code).to.equal(0)
    const again = await join({
      arrange: async (w) => {
        await rm(nodePaths(w.root).kubernetesDir, { recursive: true, force: true })
        w.token = await createTokenIssuer(w.api.registrar, () => new Date()).issue()
      },
      want: { error: /./ },
    })
    expect(again.stderr).to.match(
      /a Node with name "node-1" and status "Ready" already exists in the cluster/,
    )
  })

  describe('runKubeadmJoin against the fake', () => {
    for (const controlPlane of [false, true])
      it(`${controlPlane ? 'control plane' : 'worker'}: joins; kubeadm's files under the node root`, async () => {
        const paths = nodePaths(world.root)
        if (controlPlane) await writeSharedPki(world)
        const argv: string[][] = []
        const runner = spyingRunner((_f, args) => void argv.push([...args]), {
          KUBEADM_FAKE_API_DIR: world.api.dir,
        })
        const recorded: string[] = []
        await runKubeadmJoin(
          {
            nodeName: 'node-1',
            nodeIP: '10.0.0.5',
            apiServerEndpoint: API_SERVER,
            token: world.token,
            caCertHash: ca.caCertHash,
            controlPlane,
          },
          { runner, kubeadm: KUBEADM_FAKE, paths, recordOutput: (t) => recorded.push(t), log: silentLogger },
        )
        expect(argv.map((a) => a[0])).to.deep.equal(['version', 'join'])
        expect(await readFile(path.join(paths.kubernetesPki, 'ca.crt'), 'utf8')).to.equal(ca.caCertPem)
        expect((await stat(path.join(paths.kubernetesDir, 'kubelet.conf'))).isFile()).to.equal(true)
        expect((await readdir(paths.manifestsDir)).length).to.equal(controlPlane ? 4 : 0)
        expect(recorded.join('')).to.include('This node has joined the cluster')
        expect(recorded.join('')).not.to.include(world.token)
      })
  })
})
