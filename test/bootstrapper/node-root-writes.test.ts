/**
 * What the bootstrapper writes under the node root never follows a symlink planted at its path:
 * the file outside the root stays as it was, and the path then holds a regular file of its own
 * mode (0600 for keys, policies and certificates; components keep their install mode).
 */
import { createHash } from 'node:crypto'
import { lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { runKubeadmInit, runKubeadmJoin, stageComponents } from '../../src/lib/bootstrapper/index.js'
import { INSTALLED_FILE_MODE } from '../../src/lib/bootstrapper/components/installer.js'
import { kubeadmPaths } from '../../src/lib/bootstrapper/kubeadm/kubeadm-config.js'
import { nodePaths, type NodePaths } from '../../src/lib/paths.js'
import { silentLogger } from '../../src/lib/system/logger.js'
import type { Runner } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { KUBEADM_FAKE } from '../support/kubeadm-fake.js'
import { spyingRunner } from '../support/runner.js'
import { makeTempDir } from '../support/temp.js'

const KUBELET = Buffer.from('#!/bin/sh\necho kubelet\n')

/** Each step as the node runs it, writing into `root`. */
const steps = {
  'kubeadm init': (paths: NodePaths) =>
    runKubeadmInit(
      {
        kubernetesVersion: 'v1.31.13',
        clusterName: 'constell',
        nodeName: 'cp-0',
        nodeIP: '10.0.0.2',
        controlPlaneEndpoint: '10.0.0.2',
        certSANs: [],
        serviceCIDR: '10.96.0.0/12',
        conformance: false,
        paths: kubeadmPaths(paths),
      },
      {
        runner: spyingRunner(() => {}),
        kubeadm: KUBEADM_FAKE,
        paths,
        recordOutput: () => {},
        log: silentLogger,
      },
    ),
  'kubeadm join of a control plane': (paths: NodePaths) =>
    runKubeadmJoin(
      {
        nodeName: 'cp-1',
        nodeIP: '10.0.0.3',
        apiServerEndpoint: '10.0.0.2:6443',
        token: 'abcdef.0123456789abcdef',
        caCertHash: `sha256:${'ab'.repeat(32)}`,
        controlPlane: true,
      },
      { runner: joiningKubeadm, kubeadm: '/stub/kubeadm', paths, recordOutput: () => {}, log: silentLogger },
    ),
  'component install': async (paths: NodePaths) => {
    const staged = await stageComponents(
      [
        {
          url: `data:application/octet-stream;base64,${KUBELET.toString('base64')}`,
          hash: `sha256:${createHash('sha256').update(KUBELET).digest('hex')}`,
          installPath: '/run/state/bin/kubelet',
          extract: false,
        },
      ],
      { root: paths.root, stagingDir: path.join(paths.root, 'staging'), get: notUsed, log: silentLogger },
    )
    await staged.install()
    await staged.discard()
  },
} as const

const cases: Record<string, { step: keyof typeof steps; file: (p: NodePaths) => string; mode: number }> = {
  'the audit policy (init)': { step: 'kubeadm init', file: (p) => p.auditPolicy, mode: 0o600 },
  "the init node's kubelet certificate": {
    step: 'kubeadm init',
    file: (p) => p.kubeletClientCert,
    mode: 0o600,
  },
  "the init node's kubelet key": { step: 'kubeadm init', file: (p) => p.kubeletClientKey, mode: 0o600 },
  'the audit policy (control-plane join)': {
    step: 'kubeadm join of a control plane',
    file: (p) => p.auditPolicy,
    mode: 0o600,
  },
  'an installed component': {
    step: 'component install',
    file: (p) => path.join(p.root, 'run/state/bin/kubelet'),
    mode: INSTALLED_FILE_MODE,
  },
}

describe('node root: writes replace a planted symlink, never follow it', function () {
  this.timeout(30_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const paths = nodePaths(path.join(dir, 'root'))
      const outside = path.join(dir, 'outside.txt')
      await writeFile(outside, 'outside the node root', { mode: 0o644 })
      const file = tc.file(paths)
      await mkdir(path.dirname(file), { recursive: true })
      await symlink(outside, file)
      await steps[tc.step](paths)
      expect(await readFile(outside, 'utf8')).to.equal('outside the node root')
      const written = await lstat(file)
      expect(written.isFile(), `${file} is a file of its own`).to.equal(true)
      expect((written.mode & 0o777).toString(8)).to.equal(tc.mode.toString(8))
    })
})

/** kubeadm for a join: knows its version, and joins. */
const joiningKubeadm: Runner = {
  run: async (_file, args) => ({ stdout: args[0] === 'version' ? 'v1.31.13\n' : 'joined\n', stderr: '' }),
}

const notUsed = () => Promise.reject(new Error('data: URLs need no download'))
