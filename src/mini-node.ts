/**
 * A node of `constellation mini` as a process, without the CLI framework: its supervisor (its
 * "systemd"), which `mini up` and `mini reboot` start detached and which lives as long as the node:
 *
 *   node dist/mini-node.js --machine MACHINE.json --boot-id ID
 *
 * SIGTERM or SIGINT powers the node off in order (units stop, TPM2_Shutdown, swtpm stops), exit 0;
 * a second one exits at once. Bad arguments: the usage on stderr, exit 2.
 */
import { parseArgs } from 'node:util'
import { ExitCode, exitCodeOf, renderError } from './lib/errors/index.js'
import { runNodeSupervisor } from './wiring/mini-node.js'

const USAGE = 'usage: node mini-node.js --machine MACHINE.json --boot-id ID\n'

let values: { machine?: string; 'boot-id'?: string }
try {
  values = parseArgs({
    strict: true,
    options: { machine: { type: 'string' }, 'boot-id': { type: 'string' } },
  }).values
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`)
  process.exit(ExitCode.Usage)
}
const { machine, 'boot-id': bootId } = values
if (!machine || !bootId) {
  process.stderr.write(USAGE)
  process.exit(ExitCode.Usage)
}
try {
  await runNodeSupervisor(machine, bootId)
} catch (err) {
  for (const line of renderError(err).lines) process.stderr.write(`${line}\n`)
  process.exitCode = exitCodeOf(err)
}
