/** `constellation recover` with its production parts: aTLS against the workspace's measurements, a text logger. */
import { createAttestedChannelCredentials } from '../lib/atls/index.js'
import { validatorForConfig } from '../lib/config/index.js'
import { recoverNode, type RecoverResult } from '../lib/recover/index.js'
import { createLogger, parseDuration } from '../lib/system/index.js'

export interface RecoverFlags {
  workspace: string
  endpoint?: string
  timeout: string
}

export function runRecover(flags: RecoverFlags): Promise<RecoverResult> {
  const debug = process.env.CONSTELL_DEBUG === '1'
  return recoverNode(
    {
      workspace: flags.workspace,
      endpoint: flags.endpoint,
      timeoutMs: parseDuration(flags.timeout, '--timeout'),
      timeout: flags.timeout,
    },
    {
      credentials: (config) => createAttestedChannelCredentials({ validators: [validatorForConfig(config)] }),
      log: createLogger({ format: 'text', level: debug ? 'debug' : 'info' }),
    },
  )
}
