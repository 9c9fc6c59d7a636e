/**
 * `constellation recover` with its production parts: aTLS against the workspace's measurements, a
 * text logger, and a confirmation before the master secret goes to a node whose key nothing anchors.
 */
import { confirm } from '@inquirer/prompts'
import { createAttestedChannelCredentials } from '../lib/atls/index.js'
import {
  attestationAssurance,
  describeAssurance,
  type AttestationAssurance,
} from '../lib/attestation/index.js'
import { configuredAttestation, loadConfig, validatorForConfig } from '../lib/config/index.js'
import { CliError, ExitCode } from '../lib/errors/index.js'
import { workspacePaths } from '../lib/paths.js'
import { recoverNode, recoveryEndpoint, type RecoverResult } from '../lib/recover/index.js'
import { createLogger, parseDuration } from '../lib/system/index.js'
import { canPrompt, processTerminal, promptOrAbort } from '../lib/ui/index.js'

export interface RecoverFlags {
  workspace: string
  endpoint?: string
  timeout: string
  /** Send without asking, also to a node whose attestation key is not anchored. */
  yes: boolean
}

export interface RecoverPrompts {
  /** Shown before anything is sent: what the workspace's attestation proves, when it anchors nothing. */
  warn(line: string): void
  /** --json: stdout carries only the result, so no question is asked. */
  json: boolean
}

export type RecoverOutcome = { attestation: AttestationAssurance } & (
  RecoverResult | { endpoint?: string; recovered: false; declined: true }
)

export async function runRecover(flags: RecoverFlags, prompts: RecoverPrompts): Promise<RecoverOutcome> {
  const debug = process.env.CONSTELL_DEBUG === '1'
  const timeoutMs = parseDuration(flags.timeout, '--timeout')
  // a bad --endpoint is a usage error before any question
  const endpoint = flags.endpoint === undefined ? undefined : recoveryEndpoint(flags.endpoint, '--endpoint')
  const { variant } = configuredAttestation(await loadConfig(workspacePaths(flags.workspace).config))
  const attestation = attestationAssurance(variant)
  if (!attestation.anchored && !(await confirmed(flags.yes, prompts, attestation, endpoint)))
    return { endpoint, recovered: false, declined: true, attestation }
  const result = await recoverNode(
    { workspace: flags.workspace, endpoint: flags.endpoint, timeoutMs, timeout: flags.timeout },
    {
      credentials: (config) => createAttestedChannelCredentials({ validators: [validatorForConfig(config)] }),
      log: createLogger({ format: 'text', level: debug ? 'debug' : 'info' }),
    },
  )
  return { ...result, attestation }
}

/** A person may decide to send the master secret to an unanchored key; a script must say --yes. */
async function confirmed(
  yes: boolean,
  prompts: RecoverPrompts,
  attestation: AttestationAssurance,
  endpoint: string | undefined,
): Promise<boolean> {
  if (!yes && (prompts.json || !canPrompt(processTerminal())))
    throw new CliError(
      `refusing to send the master secret without confirmation: ${describeAssurance(attestation)}`,
      {
        exitCode: ExitCode.Usage,
        hint: 'rerun with --yes to send it all the same, or use tpm-ek attestation; nothing was sent',
        data: { attestation },
      },
    )
  prompts.warn(`Warning: ${describeAssurance(attestation)}`)
  if (yes) return true
  const question = `Send the master secret to ${endpoint ?? 'the node'} although its attestation key is not anchored?`
  return promptOrAbort('recover', () => confirm({ message: question, default: false }))
}
