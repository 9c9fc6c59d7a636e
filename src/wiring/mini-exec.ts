/** `mini exec` with its production parts: the process runner, and QEMU's guest agent for VMs. */
import { execOnNode, type NodeExecResult } from '../lib/mini/index.js'
import { createRunner } from '../lib/system/index.js'
import { guestExec } from '../lib/vm/index.js'

export function runMiniExec(
  workspace: string,
  node: string,
  argv: readonly string[],
): Promise<NodeExecResult> {
  return execOnNode(workspace, node, argv, {
    runner: createRunner(),
    guestExec: (socket, cmd) => guestExec(socket, cmd),
  })
}
