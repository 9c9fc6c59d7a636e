/** `config validate`: every problem in config and state, not just the first, each with its place. */
import { workspacePaths } from '../paths.js'
import { exists } from '../system/index.js'
import { YamlProblemsError, formatPath, parseYaml, type Located } from '../yaml/index.js'
import { checkConfig, configWarnings, loadState, readConfigFile } from './load.js'

/** One finding, as `config validate --json` reports it. */
export interface ValidationFinding {
  file: string
  line?: number
  col?: number
  /** Key path like `attestation.qemuVTPM.measurements.4`; `(document)` for the whole file. */
  path: string
  message: string
}

export interface WorkspaceValidation {
  valid: boolean
  files: Array<{ file: string; problems: ValidationFinding[]; warnings: ValidationFinding[] }>
}

export async function validateWorkspace(dir: string): Promise<WorkspaceValidation> {
  const paths = workspacePaths(dir)
  const files: WorkspaceValidation['files'] = []
  const warnings: ValidationFinding[] = []
  const problems = await problemsOf(async () => {
    const source = parseYaml(await readConfigFile(paths.config, 'config'), paths.config)
    const config = checkConfig(source)
    for (const w of configWarnings(config))
      warnings.push(finding(paths.config, { ...w, ...source.locate(w.path) }))
  })
  files.push({ file: paths.config, problems, warnings })
  if (await exists(paths.state)) {
    files.push({
      file: paths.state,
      problems: await problemsOf(() => loadState(paths.state)),
      warnings: [],
    })
  }
  return { valid: files.every((f) => f.problems.length === 0), files }
}

/** A finding as one line: `file:line:col: path: message`. */
export function formatFinding(f: ValidationFinding): string {
  const at = f.line !== undefined ? `${f.file}:${f.line}:${f.col ?? 1}` : f.file
  return `${at}: ${f.path}: ${f.message}`
}

/** Problems in the file's content; a file that cannot be read at all is the command's error. */
async function problemsOf(load: () => Promise<unknown>): Promise<ValidationFinding[]> {
  try {
    await load()
    return []
  } catch (err) {
    if (err instanceof YamlProblemsError) return err.problems.map((p) => finding(err.file, p))
    throw err
  }
}

function finding(file: string, p: Located): ValidationFinding {
  return {
    file,
    line: p.line,
    col: p.line !== undefined ? (p.column ?? 1) : undefined,
    path: formatPath(p.path),
    message: p.message,
  }
}
