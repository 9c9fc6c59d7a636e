/**
 * The Kubernetes API SIMULATOR of `constellation mini` as a process, without the CLI framework: the
 * FakeApiServer CONTRACT FAKE (a test double of the Kubernetes API, not an API server), run by
 * `mini`.
 *
 *   node dist/mini-simulator.js --dir STORAGE_DIR --kubeconfig OUT [--listen HOST:PORT] [--cert-host H]...
 *                               [--node-monitor-grace-period D] [--node-monitor-period D]
 *
 * It keeps its objects as files in STORAGE_DIR (what the kubeadm contract fake reads and writes),
 * writes its admin kubeconfig to OUT (0600), prints one line `listening URL` on stdout and serves
 * until SIGTERM or SIGINT, then stops and exits 0. `--listen` defaults to 127.0.0.1 and a random
 * port; each `--cert-host` (an IP address or DNS name) goes into its serving certificate too.
 * A Node without a heartbeat for `--node-monitor-grace-period` (kube-controller-manager's flag,
 * default 40s) is marked NotReady; its default comes from CONSTELL_MINI_NODE_GRACE_PERIOD when set,
 * which `mini up` passes on from its own environment, as it does to the nodes' kubelet stand-ins
 * (they renew their Leases every quarter of it). `--node-monitor-period` (default 5s, or a quarter
 * of a shorter grace) is how often Nodes are looked at. Bad arguments: the usage on stderr, exit 2.
 */
import { parseArgs } from 'node:util'
import { ExitCode, renderError, UsageError } from './lib/errors/index.js'
import { FakeApiServer, type FakeApiServerOptions } from './lib/simulator/index.js'
import { parseDuration, parseHostPort, serveUntilStopped, writeSecretFile } from './lib/system/index.js'

const USAGE =
  'usage: node mini-simulator.js --dir STORAGE_DIR --kubeconfig OUT [--listen HOST:PORT] [--cert-host H]...' +
  ' [--node-monitor-grace-period DURATION] [--node-monitor-period DURATION]'
/** The grace period for mini's nodes, read by this process and by the kubelet stand-ins alike. */
const GRACE_ENV = 'CONSTELL_MINI_NODE_GRACE_PERIOD'

interface SimulatorArgs {
  server: FakeApiServerOptions
  kubeconfig: string
}

function readArgs(argv: string[], env: NodeJS.ProcessEnv): SimulatorArgs {
  let values
  try {
    values = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        dir: { type: 'string' },
        kubeconfig: { type: 'string' },
        listen: { type: 'string' },
        'cert-host': { type: 'string', multiple: true },
        'node-monitor-grace-period': { type: 'string' },
        'node-monitor-period': { type: 'string' },
      },
    }).values
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err))
  }
  if (!values.dir) throw new UsageError('--dir STORAGE_DIR is required')
  if (!values.kubeconfig) throw new UsageError('--kubeconfig OUT is required')
  let listen: { host?: string; port?: number } = {}
  if (values.listen !== undefined) {
    try {
      listen = parseHostPort(values.listen, { requirePort: true, allowPortZero: true })
    } catch (err) {
      throw new UsageError(`--listen: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const certHosts = values['cert-host'] ?? []
  const empty = certHosts.find((h) => h.trim() === '')
  if (empty !== undefined) throw new UsageError('--cert-host needs an IP address or DNS name')
  const grace = values['node-monitor-grace-period'] ?? env[GRACE_ENV]
  const flag = values['node-monitor-grace-period'] ? '--node-monitor-grace-period' : GRACE_ENV
  const period = values['node-monitor-period']
  return {
    server: {
      dir: values.dir,
      ...listen,
      certHosts,
      ...(grace ? { nodeMonitorGracePeriodMs: parseDuration(grace, flag) } : {}),
      ...(period ? { nodeMonitorPeriodMs: parseDuration(period, '--node-monitor-period') } : {}),
    },
    kubeconfig: values.kubeconfig,
  }
}

async function main(argv: string[]): Promise<void> {
  let args: SimulatorArgs
  try {
    args = readArgs(argv, process.env)
  } catch (err) {
    process.stderr.write(`mini-simulator: ${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`)
    process.exitCode = ExitCode.Usage
    return
  }
  const server = new FakeApiServer(args.server)
  let stopped = () => {}
  const done = new Promise<void>((resolve) => (stopped = resolve))
  try {
    await serveUntilStopped({
      start: async () => {
        await server.start()
        await writeSecretFile(args.kubeconfig, server.kubeconfig(), 'replace')
        process.stdout.write(`listening ${server.url}\n`)
      },
      stop: async () => {
        await server.stop()
        stopped()
      },
      done,
    })
  } catch (err) {
    await server.stop()
    for (const line of renderError(err, ExitCode.Failure).lines) process.stderr.write(`${line}\n`)
    process.exitCode = ExitCode.Failure
  }
}

await main(process.argv.slice(2))
