/**
 * Test helpers for the cloud-config offload stub: cloud-init's own reading of it (the installed
 * `cloudinit` Python module, through cloud-init-userdata.py) and a real run of its boothook with
 * bash and Debian's AWS CLI against the local S3 server.
 */
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { FETCHED_USER_DATA_PATH } from '../../src/lib/bootstrapdata/boothook.js'
import { REPO_ROOT } from '../support/cli.js'
import { withTempDir } from '../support/temp.js'

const run = promisify(execFile)

export interface CloudInitPart {
  type: string
  handled: boolean
  filename: string | null
  payload: string
}

/**
 * What cloud-init 22.4 makes of the user data: its parts after includes are resolved, or the error
 * with which it refuses the data. `errorOnFailure` is cloud-init's ERROR_ON_USER_DATA_FAILURE
 * (true by default; CAPA's images patch it to false). `include` moves the include of the fetched
 * file to a test path.
 */
export async function cloudInitParts(
  userData: string,
  opts: { errorOnFailure: boolean; include?: string },
): Promise<{ parts?: CloudInitPart[]; error?: string }> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'user-data')
    await writeFile(file, userData)
    const args = [path.join(REPO_ROOT, 'test/bootstrapdata/cloud-init-userdata.py'), file]
    args.push(String(opts.errorOnFailure))
    if (opts.include) args.push(FETCHED_USER_DATA_PATH, opts.include)
    // Debian's python3: the one cloud-init itself runs with, which has the cloudinit module.
    const { stdout } = await run('/usr/bin/python3', args)
    return JSON.parse(stdout) as { parts?: CloudInitPart[]; error?: string }
  }, 'constell-cloud-init-')
}

/** Replaces one whole line of the script, failing when it is not there. */
function replaceLine(script: string, line: string, by: string): string {
  const lines = script.split('\n')
  const i = lines.indexOf(line)
  if (i < 0) throw new Error(`the boothook has no line ${JSON.stringify(line)}`)
  lines[i] = by
  return lines.join('\n')
}

export interface BoothookRun {
  code: number
  stderr: string
}

/**
 * Runs the boothook as cloud-init would (its file, executed directly), with only the output path,
 * the retry pace and the cloud-init restart moved out of the way: the output goes to `out`, the
 * restart touches `restarted`.
 */
export async function runBoothook(
  script: string,
  opts: {
    out: string
    restarted: string
    attempts?: number
    env: Record<string, string>
    dir: string
  },
): Promise<BoothookRun> {
  let s = replaceLine(script, `OUT='${FETCHED_USER_DATA_PATH}'`, `OUT='${opts.out}'`)
  s = replaceLine(s, 'DELAY=10', 'DELAY=0')
  s = replaceLine(s, 'ATTEMPTS=10', `ATTEMPTS=${opts.attempts ?? 10}`)
  s = replaceLine(s, 'RESTART=(systemctl restart cloud-init.service)', `RESTART=(touch '${opts.restarted}')`)
  const file = path.join(opts.dir, 'boothook.sh')
  await writeFile(file, s, { mode: 0o700 })
  const env = {
    // Debian's aws and coreutils only; never the instance metadata service, never ~/.aws.
    PATH: '/usr/bin:/bin',
    HOME: opts.dir,
    AWS_CONFIG_FILE: path.join(opts.dir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: path.join(opts.dir, 'no-aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    ...opts.env,
  }
  try {
    const { stderr } = await run(file, [], { env })
    return { code: 0, stderr }
  } catch (err) {
    const e = err as { code?: number; stderr?: string }
    return { code: typeof e.code === 'number' ? e.code : -1, stderr: e.stderr ?? String(err) }
  }
}
