import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { REPO_ROOT, runCli } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

interface ManifestCommand {
  flags: Record<string, { required?: boolean }>
  args: Record<string, unknown>
}

/** What each command needs besides -C to get as far as reading its flags. */
const REQUIRED: Record<string, string[]> = {
  'config generate': ['qemu'],
  'config measurements': ['-e', '127.0.0.1'],
  'config fetch-measurements': ['--url', 'file:///nonexistent/measurements.json'],
  'bootstrap-data generate': ['-f', 'objects.yaml'],
  'mini reboot': ['worker-0'],
  'mini logs': ['worker-0'],
  'mini exec': ['worker-0', 'true'],
  'mini add': ['worker-9', '--role', 'worker'],
  'mini remove': ['worker-0'],
  'node remove': ['worker-0'],
  'upgrade execute': ['--helm'],
}

/** Every command that takes -C/--workspace, from the manifest the build writes: none is left out. */
async function workspaceCommands(): Promise<string[]> {
  const manifest = JSON.parse(await readFile(path.join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {
    commands: Record<string, ManifestCommand>
  }
  return Object.entries(manifest.commands)
    .filter(([, c]) => 'workspace' in c.flags)
    .map(([id]) => id.replaceAll(':', ' '))
}

describe('-C/--workspace naming a file, in every command that takes it', () => {
  let tmp: TempDir
  before(async () => {
    tmp = await makeTempDir()
    await writeFile(path.join(tmp.dir, 'afile'), 'not a folder\n')
  })
  after(async () => tmp.cleanup())

  it('the manifest lists the commands this test walks', async () => {
    const ids = await workspaceCommands()
    expect(ids).to.include.members(['status', 'mini up', 'mini down', 'config generate', 'init'])
  })

  for (const [label, value] of [
    ['a file', 'afile'],
    ['a path through a file', 'afile/ws'],
  ] as const)
    it(`${label}: exit 2, naming the flag and the path, and nothing is written`, async function () {
      this.timeout(120_000) // one CLI process per command (~30), four at a time
      const failures: string[] = []
      const ids = await workspaceCommands()
      const walk = async () => {
        for (let id = ids.shift(); id !== undefined; id = ids.shift()) {
          const args = [...id.split(' '), ...(REQUIRED[id] ?? []), '-C', value]
          const res = await runCli(args, { cwd: tmp.dir })
          const said = res.stderr
          if (
            res.code !== 2 ||
            !said.includes('-C/--workspace') ||
            !said.includes(path.join(tmp.dir, 'afile')) ||
            said.includes('This is a bug')
          )
            failures.push(`${id}: exit ${res.code}: ${said.trim()}`)
        }
      }
      await Promise.all([walk(), walk(), walk(), walk()])
      expect(failures.sort()).to.deep.equal([])
      expect(await readFile(path.join(tmp.dir, 'afile'), 'utf8')).to.equal('not a folder\n')
    })
})
