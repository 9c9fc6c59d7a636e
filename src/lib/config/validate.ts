/** `config validate`: every problem in config and state, not just the first. */
import { access } from 'node:fs/promises'
import { workspacePaths } from '../paths.js'
import { YamlProblemsError, formatProblem } from '../yaml/index.js'
import { chainMessage } from '../errors/index.js'
import { loadConfig, loadState } from './load.js'

export interface WorkspaceValidation {
  valid: boolean
  files: Array<{ file: string; problems: string[] }>
}

export async function validateWorkspace(dir: string): Promise<WorkspaceValidation> {
  const paths = workspacePaths(dir)
  const files: WorkspaceValidation['files'] = []
  files.push({ file: paths.config, problems: await problemsOf(() => loadConfig(paths.config)) })
  const stateExists = await access(paths.state).then(
    () => true,
    () => false,
  )
  if (stateExists) files.push({ file: paths.state, problems: await problemsOf(() => loadState(paths.state)) })
  return { valid: files.every((f) => f.problems.length === 0), files }
}

async function problemsOf(load: () => Promise<unknown>): Promise<string[]> {
  try {
    await load()
    return []
  } catch (err) {
    if (err instanceof YamlProblemsError) return err.problems.map((p) => formatProblem(err.file, p))
    return [chainMessage(err)]
  }
}
