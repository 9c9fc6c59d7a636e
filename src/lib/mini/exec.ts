/**
 * `mini exec NODE -- CMD…`: runs a command on a node and returns its exit code and output, as
 * `kind exec`/`minikube ssh` users expect. A process-mode node is a network namespace (or a
 * loopback address) and a root folder: the command runs in its namespace, in its root folder. A
 * VM node is a machine: the command runs in the guest, through QEMU's guest agent.
 */
import { CliError } from '../errors/index.js'
import { CommandFailedError, type Runner } from '../system/index.js'
import { miniPaths, requireMiniNode } from './layout.js'
import { miniNetwork } from './network.js'
import { vmNodeFiles } from './vm-node.js'

export interface NodeExecResult {
  exitCode: number
  stdout: string
  stderr: string
}

export interface NodeExecIo {
  runner: Runner
  /** Runs argv on a VM through its guest agent's socket. */
  guestExec(socket: string, argv: readonly string[]): Promise<NodeExecResult>
}

export async function execOnNode(
  workspace: string,
  name: string,
  argv: readonly string[],
  io: NodeExecIo,
): Promise<NodeExecResult> {
  const { record, node } = await requireMiniNode(workspace, name)
  const [file, ...args] = argv
  if (!file) throw new CliError('mini exec: no command given', { hint: 'mini exec NODE -- COMMAND [ARGS…]' })
  const dir = miniPaths(workspace).node(name).dir
  if (record.machines === 'vm') {
    const socket = vmNodeFiles(dir).sockets.guestAgent
    return io.guestExec(socket, argv).catch((cause: unknown) => {
      throw new CliError(`mini exec: ${name}'s guest agent (${socket}) did not run ${file}`, {
        cause,
        hint: `the VM may be off, still booting, or busy (\`mini up\` and \`mini reboot\` watch it through the same agent): \`constellation mini logs ${name} console -C ${workspace}\` shows where it is; try again`,
      })
    })
  }
  const files = miniPaths(workspace).node(name)
  const [prefixFile, ...prefixArgs] = [
    ...miniNetwork(record.network, io.runner).execPrefix(node.index),
    file,
    ...args,
  ]
  try {
    const out = await io.runner.run(prefixFile!, [...prefixArgs], { cwd: files.root })
    return { exitCode: 0, ...out }
  } catch (err) {
    if (err instanceof CommandFailedError && typeof err.exitCode === 'number')
      return { exitCode: err.exitCode, stdout: err.stdout, stderr: err.stderr }
    throw err
  }
}
