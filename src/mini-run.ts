/**
 * `constellation mini up` without the CLI framework. Through oclif the command spent about a second
 * of CPU loading (oclif, its manifests, and the command's ES modules, which Node 20 compiles at
 * every start) before its first step: the wait of everyone who brings a cluster up, the e2e suite
 * included. Plain, valid flags run here; anything else (help, an unknown flag, a value out of
 * range) goes to oclif, which owns help and usage errors for the same command
 * (src/commands/mini/up.ts). Both run src/wiring/mini.ts's runMiniUpCommand.
 */
import { parseArgs } from 'node:util'
import { checkWorkspaceFolder } from './workspace-flag.js'
import { print, printJson, printToStderr, reportFailure } from './entry-output.js'
import { MINI_CVM_VARIANTS } from './lib/mini/index.js'
import { exitAfterGrace } from './lib/system/index.js'
import { ignoreClosedPipes, onInterrupt } from './lib/ui/index.js'
import { DEFAULT_KUBERNETES_MINOR } from './lib/versions/index.js'
import { runMiniUpCommand, type MiniUpFlags } from './wiring/mini.js'

/** The flags of `mini up`, as node:util's parseArgs reads them; the oclif command has the same. */
export const MINI_UP_FLAGS = {
  workspace: { type: 'string', short: 'C', default: '.' },
  'control-planes': { type: 'string', default: '1' },
  workers: { type: 'string', default: '2' },
  kubernetes: { type: 'string', short: 'k', default: DEFAULT_KUBERNETES_MINOR },
  attestation: { type: 'string', short: 'a' },
  machines: { type: 'string', default: 'process' },
  network: { type: 'string', default: 'auto' },
  'skip-helm': { type: 'boolean', default: false },
  timeout: { type: 'string' },
  'merge-kubeconfig': { type: 'boolean', default: false },
  retain: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
} as const

/** The oclif command's limits and options, which a value must meet to be run here. */
export const MINI_UP_LIMITS = {
  'control-planes': { min: 1, max: 9 },
  workers: { min: 0, max: 40 },
  attestation: ['tpm-ek', 'qemu-vtpm', ...MINI_CVM_VARIANTS],
  machines: ['process', 'vm'],
  network: ['auto', 'netns', 'loopback'],
} as const

/** The flags as the oclif command would read them; undefined when oclif must say what is wrong. */
export function miniUpFlags(argv: string[]): (MiniUpFlags & { json: boolean }) | undefined {
  let values
  try {
    values = parseArgs({ args: argv, options: MINI_UP_FLAGS, strict: true }).values
  } catch {
    return undefined
  }
  const count = (name: 'control-planes' | 'workers') => {
    const text = values[name]
    const { min, max } = MINI_UP_LIMITS[name]
    const n = /^\d{1,3}$/.test(text) ? Number(text) : NaN
    return n >= min && n <= max ? n : undefined
  }
  const one = (name: 'attestation' | 'machines' | 'network', value: string) =>
    (MINI_UP_LIMITS[name] as readonly string[]).includes(value)
  const controlPlanes = count('control-planes')
  const workers = count('workers')
  const attestation = values.attestation ?? (values.machines === 'vm' ? 'qemu-vtpm' : 'tpm-ek')
  if (controlPlanes === undefined || workers === undefined) return undefined
  if (!one('machines', values.machines) || !one('network', values.network)) return undefined
  if (!one('attestation', attestation)) return undefined
  return { ...values, 'control-planes': controlPlanes, workers, attestation }
}

/** Runs `mini up` for plain, valid flags; false when argv needs oclif. */
export async function runWithoutFramework(argv: string[]): Promise<boolean> {
  const flags = miniUpFlags(argv)
  if (!flags) return false
  ignoreClosedPipes()
  // as BaseCommand: until mini up claims the signals itself, Ctrl-C has changed nothing
  const releaseInterrupt = onInterrupt(() => ['mini up interrupted: nothing was changed'])
  try {
    await checkWorkspaceFolder(flags.workspace)
    const report = await runMiniUpCommand(flags, {
      json: flags.json,
      log: print,
      warn: printToStderr,
    })
    if (flags.json) printJson(report)
  } catch (err) {
    reportFailure(err, flags.json)
  } finally {
    releaseInterrupt()
    exitAfterGrace()
  }
  return true
}
