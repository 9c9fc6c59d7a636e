/**
 * How to tell the user to run this CLI again, so that a printed command works as printed: plain
 * `constellation` when the one their PATH finds runs this very package (scripts/link-cli.sh, or an
 * npm install), else this package's own wrapper by its full path.
 */
import { access, constants, realpath as fsRealpath } from 'node:fs/promises'
import path from 'node:path'

export interface SelfCommandFs {
  realpath: (file: string) => Promise<string>
  isExecutable: (file: string) => Promise<boolean>
}

const nodeFs: SelfCommandFs = {
  realpath: (file) => fsRealpath(file),
  isExecutable: (file) =>
    access(file, constants.X_OK).then(
      () => true,
      () => false,
    ),
}

export const CLI_NAME = 'constellation'

/** `constellation`, or the wrapper's (else bin/run.js's) full path, shell-quoted when it must be. */
export async function commandForUser(
  env: NodeJS.ProcessEnv,
  packageRoot: string,
  fs: SelfCommandFs = nodeFs,
): Promise<string> {
  const root = await fs.realpath(packageRoot).catch(() => packageRoot)
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, CLI_NAME)
    if (!(await fs.isExecutable(candidate))) continue
    // the first on PATH is the one the shell runs: ours or not, the search ends here
    const target = await fs.realpath(candidate).catch(() => '')
    if (target.startsWith(root + path.sep)) return CLI_NAME
    break
  }
  const wrapper = path.join(packageRoot, 'scripts', 'with-tools.sh')
  const own = (await fs.realpath(wrapper).then(
    () => true,
    () => false,
  ))
    ? wrapper
    : path.join(packageRoot, 'bin', 'run.js')
  return shellQuote(own)
}

/** A word the shell reads back as `word`. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}
