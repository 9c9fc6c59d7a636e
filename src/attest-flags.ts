/** Flags shared by the commands that attest a node (verify, config measurements). */
import { Flags } from '@oclif/core'
import { DEFAULT_VERIFY_TIMEOUT_MS } from './lib/verify/index.js'

export const attestTimeoutFlag = {
  timeout: Flags.string({
    description: 'give up on an unanswering node after this long (e.g. 5s, 1m)',
    default: `${DEFAULT_VERIFY_TIMEOUT_MS / 1000}s`,
  }),
}
