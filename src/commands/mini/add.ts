import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { clusterNotice, type MiniNodeRecord } from '../../lib/mini/index.js'
import { abortOnInterrupt, parseDuration } from '../../lib/system/index.js'
import { runMiniAdd } from '../../wiring/mini.js'

export default class MiniAdd extends BaseCommand {
  static override description =
    "Boot a new node into a running `mini up` cluster: the next address of its network, its own TPM, an instance in the metadata service; it joins through a control plane's join service like any other node"
  static override examples = [
    '<%= config.bin %> mini add worker-1 --role worker -C ./mini',
    '<%= config.bin %> mini add control-plane-1 --role control-plane -C ./mini',
  ]
  static override args = {
    node: Args.string({ description: "the new node's name, e.g. worker-1", required: true }),
  }
  static override flags = {
    ...BaseCommand.workspaceFlag,
    role: Flags.string({
      options: ['worker', 'control-plane'],
      required: true,
      description: 'what the node joins as',
    }),
    timeout: Flags.string({
      description: 'stop waiting when the node has not joined after this long',
      default: '5m',
    }),
  }

  async run(): Promise<{ node: MiniNodeRecord; simulated: string }> {
    const { args, flags } = await this.parse(MiniAdd)
    const notice = await clusterNotice(flags.workspace)
    process.stderr.write(`${notice}\n`)
    const interrupt = abortOnInterrupt()
    try {
      const node = await runMiniAdd(
        {
          workspace: flags.workspace,
          name: args.node,
          role: flags.role === 'control-plane' ? 'control-plane' : 'worker',
          timeoutMs: parseDuration(flags.timeout, '--timeout'),
          signal: interrupt.signal,
        },
        (line) => process.stderr.write(`• ${line}\n`),
      )
      if (!this.jsonEnabled()) this.log(`${node.name} (${node.role}) joined at ${node.address}.`)
      return { node, simulated: notice }
    } finally {
      interrupt.release()
    }
  }
}
