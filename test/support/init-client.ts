/**
 * Node-side Init tests: a real Bootstrapper (swtpm, cryptsetup image, aTLS) on a LocalNode,
 * and a raw Init client that shows exactly what the node sent (every log chunk, the final status).
 */
import type { Metadata, ServiceError } from '@grpc/grpc-js'
import { createIssuer } from '../../src/lib/attestation/index.js'
import { validatorForConfig } from '../../src/lib/config/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import { APIClient, InitRequest, type InitResponse } from '../../src/gen/init.js'
import { LogCollector, type Bootstrapper } from '../../src/lib/bootstrapper/index.js'
import { httpGet } from '../../src/lib/system/http-get.js'
import { loadConfig } from '../../src/lib/config/index.js'
import { clusterKmsUri } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { createLogger } from '../../src/lib/system/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { buildBootstrapper, type BootstrapperIo } from '../../src/wiring/bootstrapper.js'
import { readInitSecret } from './init-secret.js'
import type { LocalNode } from './local-node.js'
import { spyingRunner } from './runner.js'
import { type Component } from '../../src/lib/bootstrapper/components/installer.js'

export interface InitReply {
  code: number
  details: string
  failure?: string
  kubeconfig?: Buffer
  logChunks: Buffer[]
}

export interface RunningNode {
  daemon: Bootstrapper
  address: string
  logs: LogCollector
  /** Every command the node ran (cryptsetup, kubeadm). */
  spyArgv: string[][]
}

/**
 * A Bootstrapper in this process; `env` reaches kubeadm (the contract fake's switches), `io`
 * replaces parts of the node's outside world (a join client, download settings).
 */
export async function startNode(
  node: LocalNode,
  env: NodeJS.ProcessEnv = {},
  io: Partial<BootstrapperIo> = {},
  listen = '127.0.0.1:0',
): Promise<RunningNode> {
  const logs = new LogCollector()
  const spyArgv: string[][] = []
  const runner = spyingRunner((file, args) => void spyArgv.push([file, ...args]), env)
  const daemon = buildBootstrapper(node.nodeConfig(listen), {
    openTpm: node.swtpm.open,
    runner,
    httpGet,
    logs,
    log: createLogger({ format: 'json', write: logs.write }),
    issuer: createIssuer('qemu-vtpm', node.swtpm.open),
    ...io,
  })
  const address = await daemon.start()
  return { daemon, address, logs, spyArgv }
}

/** One attested channel for many calls (one handshake). */
export async function attestedClient(node: LocalNode, address: string): Promise<APIClient> {
  const config = await loadConfig(workspacePaths(node.workspace).config)
  const credentials = createAttestedChannelCredentials({ validators: [validatorForConfig(config)] })
  return new APIClient(address, credentials, { 'grpc.enable_retries': 0 })
}

/** The request `constellation init` would send for this workspace. */
export async function initRequest(
  node: LocalNode,
  overrides: Partial<InitRequest> = {},
): Promise<InitRequest> {
  const ws = workspacePaths(node.workspace)
  const config = await loadConfig(ws.config)
  const secret = await readInitSecret(node.workspace)
  const components: Component[] = (config.kubernetesComponents ?? []).map((c) => ({
    ...c,
    hash: c.hash ?? '',
    extract: c.extract ?? false,
  }))
  return InitRequest.fromPartial({
    kmsUri: clusterKmsUri({ key: Buffer.alloc(32, 7), salt: Buffer.alloc(32, 8) }),
    storageUri: 'storage://no-store',
    measurementSalt: Buffer.alloc(32, 9),
    kubernetesVersion: 'v1.31.13',
    kubernetesComponents: components,
    initSecret: secret,
    clusterName: 'constell',
    ...overrides,
  })
}

export function callInit(client: APIClient, request: InitRequest, signal?: AbortSignal): Promise<InitReply> {
  return new Promise((resolve) => {
    const reply: InitReply = { code: -1, details: '', logChunks: [] }
    const call = client.init(request, { deadline: Date.now() + 90_000 })
    signal?.addEventListener('abort', () => call.cancel(), { once: true })
    call.on('data', (msg: InitResponse) => {
      const kind = msg.kind
      if (kind?.$case === 'initFailure') reply.failure = kind.value.error
      else if (kind?.$case === 'log') reply.logChunks.push(kind.value.log)
      else if (kind?.$case === 'initSuccess') reply.kubeconfig = kind.value.kubeconfig
    })
    call.on('error', (err: ServiceError) => resolve({ ...reply, code: err.code, details: err.details }))
    call.on('status', (s: { code: number; details: string; metadata: Metadata }) => {
      if (s.code === 0) resolve({ ...reply, code: 0, details: s.details })
    })
  })
}

export async function pcr15(node: LocalNode): Promise<Buffer> {
  return (await readPcrs(node.swtpm.open, [15])).get(15) ?? Buffer.alloc(0)
}
