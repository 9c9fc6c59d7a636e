/**
 * The init secret of a workspace, read as the CLI reads it: through the state loader. A regex on
 * the YAML text missed it whenever its hex was all digits (or digits around one `e`): YAML then
 * quotes the string so that it does not read back as a number, about once in 1,700 workspaces,
 * and the test node got the hash of an empty secret ("invalid init secret").
 */
import { loadState } from '../../src/lib/config/index.js'
import { workspacePaths } from '../../src/lib/paths.js'

export async function readInitSecret(workspace: string): Promise<Buffer> {
  const state = await loadState(workspacePaths(workspace).state)
  const secret = Buffer.from(state.infrastructure.initSecret, 'hex')
  if (secret.length === 0) throw new Error(`the state in ${workspace} has no init secret`)
  return secret
}
