/** A local node for init tests: swtpm, a LUKS2 image, components on a loopback HTTP server, a workspace. */
import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { readFile, rm, stat, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { generateWorkspace, loadConfig } from '../../src/lib/config/index.js'
import type { BootstrapperConfig } from '../../src/lib/bootstrapper/index.js'
import type { BootstrapperNodeConfigFile } from '../../src/lib/nodeconfig/node-config.js'
import { hashInitSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { runCli, type CliResult } from './cli.js'
import { KUBEADM_FAKE } from './kubeadm-fake.js'
import { readInitSecret } from './init-secret.js'
import { createLuksImage, TEST_PBKDF } from './luks-image.js'
import { freePort, waitForPort } from './ports.js'
import { installFakeSystemd, type FakeSystemd } from './fake-systemd.js'
import { startSwtpm, type SwtpmHandle } from './swtpm.js'
import { makeTempDir } from './temp.js'

export interface LocalNode {
  dir: string
  root: string
  /** Where startDaemonProcess writes the node config (the systemd units name it). */
  configFile: string
  /** The node's systemd (FakeSystemctl over the real units): a control plane's services start here. */
  systemd: FakeSystemd
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

export async function startLocalNode(): Promise<LocalNode> {
  const { dir, cleanup } = await makeTempDir()
  const root = path.join(dir, 'root')
  const configFile = path.join(dir, 'node-config.yaml')
  const [keyPort, joinPort, recoveryPort] = [await freePort(), await freePort(), await freePort()]
  const systemd = await installFakeSystemd({ dir: path.join(dir, 'systemd'), nodeConfig: configFile, root })
  const workspace = path.join(dir, 'ws')
  const swtpm = await startSwtpm()
  const launcher = kubeadmLauncher(dir)
  const server: Server = createServer((req, res) =>
    req.url === '/kubeadm' ? res.end(launcher) : res.writeHead(404).end(),
  )
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const componentsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const disk = await createLuksImage(dir, { root })
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
    const initSecretHash = await hashInitSecret(await readInitSecret(workspace)) // production's cost, as config init-secret-hash writes it
    return {
      dir,
      root,
      configFile,
      systemd,
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
        keyService: { listen: `127.0.0.1:${keyPort}` },
        recoveryServer: { listen: `127.0.0.1:${recoveryPort}` },
        joinService: { listen: `127.0.0.1:${joinPort}` },
        kubeconfig: path.join(root, 'etc/kubernetes/admin.conf'),
        initSecretHash,
        kubeadm: path.join(root, 'run/state/bin/kubeadm'),
        stateDisk: { device: disk.image, pbkdf: TEST_PBKDF },
        metadata: {
          provider: 'static',
          self: { name: 'cp_0', role: 'control-plane', vpcIP: '127.0.0.1' },
          peers: [],
        },
      }),
      stop: async () => {
        await systemd.stop() // the services an init started, before the TPM they use goes
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
  node: Pick<LocalNode, 'configFile' | 'workspace' | 'systemd'> & {
    nodeConfig(listen: string): BootstrapperNodeConfigFile
  },
  env: NodeJS.ProcessEnv = {},
): Promise<DaemonProcess> {
  const port = await freePort()
  const config = node.configFile
  await writeFile(config, stringifyYaml(node.nodeConfig(`127.0.0.1:${port}`)))
  const stop = new AbortController()
  let done = false
  const exited = runCli(['bootstrap', 'run', '--config', config], {
    timeoutMs: 120_000,
    signal: stop.signal,
    asUnit: true,
    env: { ...node.systemd.env, ...env },
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
 * Makes the workspace config expect `hex` as PCR 4, a value no test TPM has; resolves with the
 * config's text before, for putting it back.
 */
export async function expectPcr4(workspace: string, hex: string): Promise<string> {
  const file = workspacePaths(workspace).config
  const config = await readFile(file, 'utf8')
  const pcr4 = /(\n\s+"?4"?:\s*\n\s+expected:\s*)"?([0-9a-f]{64})"?/.exec(config)
  if (!pcr4) throw new Error(`no PCR 4 in ${file}`)
  await writeFile(file, config.replace(pcr4[0], `${pcr4[1]}"${hex}"`))
  return config
}
