import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { generateBootstrapData } from '../../src/lib/bootstrapdata/index.js'
import { fixtureText, tempWorkspace, testDeps, testOptions } from './helpers.js'

describe('bootstrap data output paths (never clobber)', () => {
  let ws: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => (ws = await tempWorkspace()))
  afterEach(async () => ws.cleanup())

  it('a new path for several machines becomes a directory with one file each', async () => {
    const result = await generateBootstrapData(
      testOptions(ws.dir, { output: path.join(ws.dir, 'join') }),
      await testDeps(await fixtureText(true)),
    )
    expect(result.machines.map((m) => path.relative(ws.dir, m.file))).to.deep.equal([
      'join/cp-0.cloud-config',
      'join/cp-1.cloud-config',
      'join/worker-0.cloud-config',
    ])
  })

  it('an existing file for several machines is a usage error', async () => {
    await writeFile(path.join(ws.dir, 'taken'), 'x')
    const run = generateBootstrapData(
      testOptions(ws.dir, { output: path.join(ws.dir, 'taken') }),
      await testDeps(await fixtureText(true)),
    )
    await expect(run).to.be.rejectedWith(/-o .*taken is a file, but 3 machines get data/)
  })

  it('one existing output stops the run before anything (token Secret, other machines) is written', async () => {
    const out = path.join(ws.dir, 'out')
    await mkdir(out)
    await writeFile(path.join(out, 'cp-1.cloud-config'), 'keep me')
    const run = generateBootstrapData(
      testOptions(ws.dir, { output: `${out}/` }),
      await testDeps(await fixtureText(true)),
    )
    await expect(run).to.be.rejectedWith(/cp-1\.cloud-config already exists/)
    expect(await readdir(out)).to.deep.equal(['cp-1.cloud-config'])
    expect(await readFile(path.join(out, 'cp-1.cloud-config'), 'utf8')).to.equal('keep me')
  })
})
