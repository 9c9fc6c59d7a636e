/** `config init-secret-hash`: what a node's config needs to check the operator's init secret. */
import { hashInitSecret } from '../kms/index.js'
import { workspacePaths } from '../paths.js'
import { CliError } from '../errors/index.js'
import { loadState } from './load.js'

export async function initSecretHashFor(workspace: string): Promise<{ initSecretHash: string }> {
  const state = await loadState(workspacePaths(workspace).state)
  const secret = Buffer.from(state.infrastructure.initSecret, 'hex')
  if (secret.length === 0) {
    throw new CliError('the state has no infrastructure.initSecret', {
      hint: 'generate a workspace with `constellation config generate`',
    })
  }
  return { initSecretHash: await hashInitSecret(secret) }
}
