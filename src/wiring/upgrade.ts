/**
 * `upgrade check` and `upgrade execute` with their production parts: helm through the process
 * runner, the cluster reader from the kubeconfig, prompts and progress on the process's terminal.
 */
import { confirm } from '@inquirer/prompts'
import { createRunner } from '../lib/system/index.js'
import { canPrompt, onInterrupt, processTerminal, promptOrAbort, stepProgress } from '../lib/ui/index.js'
import {
  createClusterReader,
  type ExecuteDeps,
  type HelmDeps,
  type PreparedUpgrade,
} from '../lib/upgrade/index.js'

export function helmDeps(): HelmDeps {
  return {
    runner: createRunner(),
    env: process.env,
    openReader: (kubeconfig) => createClusterReader({ file: kubeconfig }),
  }
}

/** With `json`, stdout carries only the report, so progress is not drawn. */
export function executeDeps(prepared: PreparedUpgrade, opts: { json: boolean }): ExecuteDeps {
  const terminal = processTerminal()
  return {
    openReader: () => prepared.reader,
    confirm: canPrompt(terminal)
      ? (message) => promptOrAbort('upgrade', () => confirm({ message, default: false }))
      : undefined,
    onInterrupt: (describe) => onInterrupt(describe),
    progress: stepProgress(terminal, { quiet: opts.json }),
    now: () => new Date(),
  }
}
