/**
 * `constellation init` as a process when things go wrong around it: Ctrl-C and SIGTERM, files in
 * the way, a failed or interrupted earlier run, a kubeconfig that cannot take the new cluster.
 */
import { chmod, lstat, mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { encodeMasterSecret, generateMasterSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli } from '../support/cli.js'
import { startSilentPeer } from '../support/silent-peer.js'
import { runCliOnTerminal } from '../support/terminal.js'
import {
  setClusterEndpoint,
  startDaemonProcess,
  startLocalNode,
  type LocalNode,
} from '../support/local-node.js'

const pcr15IsZero = async (node: LocalNode) =>
  (await readPcrs(node.swtpm.open, [15])).get(15)?.equals(Buffer.alloc(32)) ?? false

async function waitUntil(done: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((r) => setTimeout(r, 50))
}

describe('constellation init: interrupts, leftovers and files in the way (CLI processes)', function () {
  this.timeout(180_000)
  let node: LocalNode
  beforeEach(async () => (node = await startLocalNode()))
  afterEach(() => node.stop())

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal} while the node does not answer yet: exit ${code}, "nothing was sent", and the next init reuses the master secret`, async () => {
      const silent = await startSilentPeer()
      try {
        await setClusterEndpoint(node.workspace, `127.0.0.1:${silent.port}`)
        const run = spawnCli(['init', '--skip-helm', '-C', node.workspace, '--timeout', '2m'])
        await waitUntil(
          () => run.stdout().includes('Verifying the attestation') || run.child.exitCode !== null,
        )
        run.child.kill(signal)
        const res = await run.result
        expect(res.code, res.stderr).to.equal(code)
        const ws = workspacePaths(node.workspace)
        expect(res.stderr).to.include('nothing was sent').and.include(`${ws.masterSecret} can be reused`)
        expect(res.stderr).to.not.include('This is a bug')
        const secret = await readFile(ws.masterSecret, 'utf8')

        const daemon = await startDaemonProcess(node)
        const again = await runCli(['init', '--skip-helm', '-C', node.workspace, '--json'])
        await daemon.expectInitSucceeded(again)
        expect(JSON.parse(again.stdout)).to.include({ masterSecretSource: 'reused' })
        expect(await readFile(ws.masterSecret, 'utf8')).to.equal(secret)
        expect((await daemon.exited).code).to.equal(0)
      } finally {
        await silent.stop()
      }
    })

    it(`${signal} after the node took the request: exit ${code}, says the node may be initialized, to keep the master secret, and that init run again resumes`, async () => {
      const hold = await node.holdKubeadm()
      const daemon = await startDaemonProcess(node)
      try {
        const run = spawnCli(['init', '--skip-helm', '-C', node.workspace])
        await Promise.race([hold.reached(), run.result])
        run.child.kill(signal)
        const res = await run.result
        expect(res.code, res.stderr).to.equal(code)
        const ws = workspacePaths(node.workspace)
        expect(res.stderr)
          .to.include('the node may be initialized')
          .and.include(`the master secret in ${ws.masterSecret} (keep it)`)
          .and.include(`Run \`constellation init -C ${node.workspace}\` again: it resumes`)
          .and.not.include('spent')
        expect(await pcr15IsZero(node)).to.equal(false)
      } finally {
        await hold.release()
        await daemon.stop()
      }
    })
  }

  it('Ctrl-C on a terminal (spinners on) prints the same state line, exit 130', async () => {
    const silent = await startSilentPeer()
    try {
      await setClusterEndpoint(node.workspace, `127.0.0.1:${silent.port}`)
      const ws = workspacePaths(node.workspace)
      // listr2 holds back stderr while it draws; the line must reach the terminal anyway
      const r = await runCliOnTerminal(
        ['init', '--skip-helm', '-C', node.workspace, '--timeout', '2m'],
        process.env,
        {
          when: () =>
            stat(ws.masterSecret).then(
              () => true,
              () => false,
            ), // now dialing the silent peer
          keys: '\u0003',
        },
      )
      expect(r.code, r.output).to.equal(130)
      expect(r.output).to.include('nothing was sent').and.include(`${ws.masterSecret} can be reused`)
    } finally {
      await silent.stop()
    }
  })

  it('through oclif (help-capable entry) an interrupt reports the same line and exit code', async () => {
    const silent = await startSilentPeer()
    try {
      await setClusterEndpoint(node.workspace, `127.0.0.1:${silent.port}`)
      const results = []
      for (const oclif of [false, true]) {
        const run = spawnCli(['init', '--skip-helm', '-C', node.workspace], { oclif })
        await waitUntil(
          () => run.stdout().includes('Verifying the attestation') || run.child.exitCode !== null,
        )
        run.child.kill('SIGINT')
        results.push(await run.result)
      }
      expect(results[0]?.code).to.equal(130)
      expect(results[1]?.code).to.equal(130)
      expect(results[1]?.stderr).to.equal(results[0]?.stderr)
      expect(results[1]?.stdout).to.include('Reusing the master secret') // what the first run left
    } finally {
      await silent.stop()
    }
  })

  it('a dangling symlink at constellation-admin.conf stops init before anything is sent', async () => {
    const daemon = await startDaemonProcess(node)
    try {
      const ws = workspacePaths(node.workspace)
      await symlink(path.join(node.dir, 'nowhere'), ws.adminConf)
      const res = await runCli(['init', '--skip-helm', '-C', node.workspace])
      expect(res.code, res.stderr).to.equal(1)
      expect(res.stderr).to.include(`${ws.adminConf} already exists`)
      expect(await readlink(ws.adminConf)).to.equal(path.join(node.dir, 'nowhere'))
      expect(await pcr15IsZero(node)).to.equal(true)
    } finally {
      await daemon.stop()
    }
  })

  const badSecrets: Record<string, { write: (file: string) => Promise<void>; says: string }> = {
    'readable by others (0644)': {
      write: async (file) => {
        await writeFile(file, encodeMasterSecret(generateMasterSecret()))
        await chmod(file, 0o644)
      },
      says: 'mode 0644',
    },
    'not JSON': {
      write: (file) => writeFile(file, 'precious\n', { mode: 0o600 }),
      says: 'not JSON',
    },
    'a key of the wrong length': {
      write: (file) => writeFile(file, '{"key":"AAAA","salt":"AAAA"}\n', { mode: 0o600 }),
      says: 'key: want 32 bytes',
    },
  }
  for (const [name, { write, says }] of Object.entries(badSecrets)) {
    it(`refuses a leftover master secret that is ${name}, naming the file, and leaves it untouched`, async () => {
      const ws = workspacePaths(node.workspace)
      await write(ws.masterSecret)
      const before = await readFile(ws.masterSecret, 'utf8')
      const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--timeout', '5s'])
      expect(res.code, res.stderr).to.equal(1)
      expect(res.stderr).to.include(ws.masterSecret).and.include(says).and.not.include('This is a bug')
      expect(await readFile(ws.masterSecret, 'utf8')).to.equal(before)
    })
  }

  it('--merge-kubeconfig with a same-named cluster in ~/.kube/config: success, suffixed entries, a symlinked kubeconfig is written through with its mode', async () => {
    const daemon = await startDaemonProcess(node)
    const home = path.join(node.dir, 'home')
    await mkdir(path.join(home, '.kube'), { recursive: true })
    const target = path.join(node.dir, 'dotfiles', 'kubeconfig')
    await mkdir(path.dirname(target))
    const old = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'constell', cluster: { server: 'https://old:6443' } }],
      users: [{ name: 'constell-admin', user: { token: 't' } }],
      contexts: [
        { name: 'constell-admin@constell', context: { cluster: 'constell', user: 'constell-admin' } },
      ],
    }
    await writeFile(target, stringifyYaml(old), { mode: 0o640 })
    await chmod(target, 0o640)
    const userKubeconfig = path.join(home, '.kube', 'config')
    await symlink(target, userKubeconfig)
    const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--merge-kubeconfig'], {
      env: { HOME: home, KUBECONFIG: '' },
    })
    await daemon.expectInitSucceeded(res)
    expect(res.stdout).to.include('successfully initialized')
    const id = /Cluster identifier\s+([0-9a-f]{64})/.exec(res.stdout)?.[1] ?? ''
    const name = `constell-${id.slice(0, 8)}`
    expect((await lstat(userKubeconfig)).isSymbolicLink()).to.equal(true)
    expect((await stat(target)).mode & 0o777).to.equal(0o640)
    const merged = parse(await readFile(target, 'utf8')) as {
      clusters: Array<{ name: string }>
      users: Array<{ name: string }>
      contexts: Array<{ name: string; context: { cluster: string; user: string } }>
      'current-context': string
    }
    expect(merged.clusters.map((c) => c.name)).to.deep.equal(['constell', name])
    expect(merged.users.map((u) => u.name)).to.deep.equal(['constell-admin', `${name}-admin`])
    expect(merged.contexts[1]).to.deep.include({ name, context: { cluster: name, user: `${name}-admin` } })
    expect(merged['current-context']).to.equal(name)
    expect((await daemon.exited).code).to.equal(0)
  })

  it('--merge-kubeconfig that cannot merge still reports the initialized cluster, warns, and exits 0', async () => {
    const daemon = await startDaemonProcess(node)
    const home = path.join(node.dir, 'home')
    await mkdir(path.join(home, '.kube'), { recursive: true })
    const userKubeconfig = path.join(home, '.kube', 'config')
    await writeFile(userKubeconfig, '- just\n- a list\n')
    const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--merge-kubeconfig'], {
      env: { HOME: home, KUBECONFIG: '' },
    })
    await daemon.expectInitSucceeded(res)
    expect(res.stdout).to.include('successfully initialized')
    expect(res.stderr).to.include(`Warning: not merged into ${userKubeconfig}`)
    expect(res.stderr).to.not.include('nothing was changed')
    expect(await readFile(userKubeconfig, 'utf8')).to.equal('- just\n- a list\n')
    expect(await readFile(workspacePaths(node.workspace).state, 'utf8')).to.match(/clusterID: [0-9a-f]{64}/)
    expect((await daemon.exited).code).to.equal(0)
  })

  it('--skip-helm says what to run next: the cluster has no CNI, DNS or kube-proxy yet', async () => {
    const daemon = await startDaemonProcess(node)
    const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--json'])
    await daemon.expectInitSucceeded(res)
    const out = JSON.parse(res.stdout) as { nextSteps: string[]; masterSecretSource: string }
    expect(out.masterSecretSource).to.equal('generated')
    const steps = out.nextSteps.join('\n')
    expect(steps).to.include('no network plugin (CNI)').and.include('(--skip-helm)')
    expect(steps).to.include(`constellation upgrade execute --helm --yes -C ${node.workspace}`)
    expect((await daemon.exited).code).to.equal(0)
  })

  it('a failed init: attestation ✔ and initialization ✖ are separate steps; no gRPC internals unless CONSTELL_DEBUG=1', async () => {
    for (const debug of ['', '1']) {
      const daemon = await startDaemonProcess(node, { KUBEADM_FAKE_FAIL: 'init' })
      const res = await runCli(['init', '--skip-helm', '-C', node.workspace], {
        env: { CONSTELL_DEBUG: debug },
      })
      expect(res.code, res.stderr).to.equal(1)
      const output = res.stdout + res.stderr
      expect(output).to.match(/✔ Verifying the attestation of the node at 127\.0\.0\.1:\d+/)
      expect(output).to.match(/✖ Initializing the cluster on 127\.0\.0\.1:\d+/)
      const failed = 'initializing the cluster failed on the node: '
      if (debug)
        expect(res.stderr, output).to.include(
          `${failed}rpc error: code = INTERNAL desc = running kubeadm init`,
        )
      else {
        expect(res.stderr, output).to.include(`${failed}running kubeadm init`)
        expect(output).to.not.match(/rpc error|code = |INTERNAL/)
      }
      expect((await daemon.exited).code).to.equal(1)
      await node.stop()
      node = await startLocalNode()
    }
  })
})
