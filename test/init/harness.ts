/** A local node for init tests: swtpm, a LUKS2 image, components on a loopback HTTP server, a workspace. */
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { readFile, rm, stat, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { generateWorkspace, loadConfig } from '../../src/lib/config/index.js'
import type { BootstrapperConfig } from '../../src/lib/bootstrapper/index.js'
import { hashInitSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { createRunner } from '../../src/lib/system/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { KUBEADM_FAKE } from '../support/kubeadm-fake.js'
import { CLI, CLI_ARGS, REPO_ROOT, runCli, type CliResult } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { freePort, waitForPort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'

export const TEST_PBKDF = { type: 'pbkdf2', iterations: 1000 } as const

export interface LocalNode {
  dir: string
  root: string
  workspace: string
  swtpm: SwtpmHandle
  disk: { image: string; initialKeyFile: string; initialKey: Buffer }
  componentsUrl: string
  /** Bootstrapper config listening on `listen`. */
  nodeConfig(listen: string): BootstrapperConfig
  initSecretHash: string
  /** Makes kubeadm wait (after the node lock) until `release`: a node busy with an Init. */
  holdKubeadm(): Promise<KubeadmHold>
  stop(): Promise<void>
}

export interface KubeadmHold {
  /** Resolves once the node runs kubeadm, i.e. it has taken the request past its lock. */
  reached(): Promise<void>
  release(): Promise<void>
}

/**
 * The kubeadm "component": a launcher for the kubeadm contract fake, so the installer really
 * installs it. While `<dir>/hold-kubeadm` exists it waits, and marks that it got that far.
 */
function kubeadmLauncher(dir: string): Buffer {
  const hold = path.join(dir, 'hold-kubeadm')
  const held = path.join(dir, 'kubeadm-held')
  return Buffer.from(
    `#!/bin/sh\nwhile [ -e "${hold}" ]; do touch "${held}"; sleep 0.1; done\nexec "${process.execPath}" "${KUBEADM_FAKE}" "$@"\n`,
  )
}

async function holdKubeadm(dir: string): Promise<KubeadmHold> {
  const hold = path.join(dir, 'hold-kubeadm')
  await writeFile(hold, '')
  return {
    reached: async () => {
      while (
        !(await stat(path.join(dir, 'kubeadm-held')).then(
          () => true,
          () => false,
        ))
      )
        await new Promise((r) => setTimeout(r, 50))
    },
    release: () => rm(hold, { force: true }),
  }
}

export async function createLuksImage(dir: string) {
  const image = path.join(dir, 'state-disk.img')
  const initialKeyFile = path.join(dir, 'initial.key')
  const initialKey = randomBytes(32)
  await writeFile(image, Buffer.alloc(0))
  await writeFile(initialKeyFile, initialKey, { mode: 0o600 })
  const runner = createRunner()
  await runner.run('truncate', ['-s', '20M', image])
  await runner.run('cryptsetup', [
    'luksFormat',
    '--batch-mode',
    '--type',
    'luks2',
    '--pbkdf',
    TEST_PBKDF.type,
    '--pbkdf-force-iterations',
    String(TEST_PBKDF.iterations),
    '--key-file',
    initialKeyFile,
    image,
  ])
  return { image, initialKeyFile, initialKey }
}

export async function startLocalNode(): Promise<LocalNode> {
  const { dir, cleanup } = await makeTempDir()
  const root = path.join(dir, 'root')
  const workspace = path.join(dir, 'ws')
  const swtpm = await startSwtpm()
  const launcher = kubeadmLauncher(dir)
  const server: Server = createServer((req, res) =>
    req.url === '/kubeadm' ? res.end(launcher) : res.writeHead(404).end(),
  )
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const componentsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const disk = await createLuksImage(dir)
    await generateWorkspace({
      workspace,
      provider: 'qemu',
      kubernetes: 'v1.31',
      variant: 'qemu-vtpm',
      name: 'constell',
      endpoint: '127.0.0.1',
    })
    const paths = workspacePaths(workspace)
    const config = await loadConfig(paths.config)
    config.kubernetesComponents = [
      {
        url: `${componentsUrl}/kubeadm`,
        hash: `sha256:${createHash('sha256').update(launcher).digest('hex')}`,
        installPath: '/run/state/bin/kubeadm',
        extract: false,
      },
    ]
    await writeFile(paths.config, stringifyYaml(config))
    const state = (await readFile(paths.state, 'utf8')).match(/initSecret: (\w+)/)?.[1] ?? ''
    const initSecretHash = await hashInitSecret(Buffer.from(state, 'hex')) // production's cost, as config init-secret-hash writes it
    return {
      dir,
      root,
      workspace,
      swtpm,
      disk,
      componentsUrl,
      initSecretHash,
      holdKubeadm: () => holdKubeadm(dir),
      nodeConfig: (listen) => ({
        attestationVariant: 'qemu-vtpm',
        tpm: { swtpm: swtpm.endpoint },
        root,
        initServer: { listen },
        verifyService: { listen: '127.0.0.1:1' },
        initSecretHash,
        kubeadm: path.join(root, 'run/state/bin/kubeadm'),
        stateDisk: { device: disk.image, initialKeyFile: disk.initialKeyFile, pbkdf: TEST_PBKDF },
        metadata: {
          provider: 'static',
          self: { name: 'cp_0', role: 'control-plane', vpcIP: '127.0.0.1' },
          peers: [],
        },
      }),
      stop: async () => {
        await new Promise<void>((r) => server.close(() => r()))
        await swtpm.stop()
        await cleanup()
      },
    }
  } catch (err) {
    await new Promise<void>((r) => server.close(() => r()))
    await swtpm.stop()
    await cleanup()
    throw err
  }
}

/** Points the workspace's state at the node's init server. */
export async function setClusterEndpoint(workspace: string, endpoint: string): Promise<void> {
  const file = workspacePaths(workspace).state
  const text = await readFile(file, 'utf8')
  await writeFile(file, text.replace(/clusterEndpoint: .*/, `clusterEndpoint: ${endpoint}`))
}

/** `constellation bootstrap run` as a child process on a free loopback port, the workspace pointed at it. */
export interface DaemonProcess {
  /** Resolves when the daemon exits (after a successful init it exits 0 by itself). */
  exited: Promise<CliResult>
  /** Asserts an init run succeeded; otherwise stops the daemon and fails with both sides' output. */
  expectInitSucceeded(init: CliResult): Promise<void>
  /** SIGTERM, then its result. */
  stop(): Promise<CliResult>
}

export async function startDaemonProcess(
  node: LocalNode,
  env: NodeJS.ProcessEnv = {},
): Promise<DaemonProcess> {
  const port = await freePort()
  const config = path.join(node.dir, 'node-config.yaml')
  await writeFile(config, stringifyYaml(node.nodeConfig(`127.0.0.1:${port}`)))
  const stop = new AbortController()
  let done = false
  const exited = runCli(['bootstrap', 'run', '--config', config], {
    timeoutMs: 120_000,
    signal: stop.signal,
    env,
  }).finally(() => (done = true))
  const stopAndReport = async (what: string, cause?: unknown): Promise<never> => {
    stop.abort()
    const daemon = await exited
    throw new Error(`${what}\nbootstrapper (exit ${daemon.code}):\n${daemon.stderr}`, { cause })
  }
  await waitForPort(port, { gaveUp: () => done }).catch((err: unknown) =>
    stopAndReport('bootstrap run did not serve', err),
  )
  await setClusterEndpoint(node.workspace, `127.0.0.1:${port}`)
  return {
    exited,
    async expectInitSucceeded(init) {
      if (init.code !== 0) await stopAndReport(`init exited ${init.code}:\n${init.stdout}${init.stderr}`)
    },
    stop: () => {
      stop.abort()
      return exited
    },
  }
}

/**
 * The built CLI as a child the test can signal; `result` resolves when it exits. `oclif` runs the
 * command line through oclif, as bin/run.js does for anything but plain init flags.
 */
export function spawnCli(args: readonly string[], opts: { env?: NodeJS.ProcessEnv; oclif?: boolean } = {}) {
  const throughOclif = `const { execute } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist/cli.js'))});
await execute({ dir: ${JSON.stringify(new URL(`file://${CLI}`).href)}, args: ${JSON.stringify(args)} })`
  const argv = opts.oclif ? ['--input-type=module', '-e', throughOclif] : [...CLI_ARGS, ...args]
  const child: ChildProcess = spawn(process.execPath, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, CONSTELL_NO_SPINNER: '1', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const result = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
  return { child, result, stdout: () => stdout }
}
