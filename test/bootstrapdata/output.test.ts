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

  it('data over the limit stops init before the CA keys or the admin kubeconfig are written', async () => {
    const fresh = await tempWorkspace(false)
    try {
      const run = generateBootstrapData(
        testOptions(fresh.dir, { machine: 'cp-0', maxUserDataBytes: 100 }),
        await testDeps(await fixtureText()),
      )
      await expect(run).to.be.rejectedWith(
        /user data for Machine "cp-0" is \d+ bytes, above the limit of 100/,
      )
      expect(await readdir(fresh.dir)).to.deep.equal([])
    } finally {
      await fresh.cleanup()
    }
  })

  it('a write that fails at the end removes what the run had written (CA set, kubeconfig), and says so', async () => {
    const fresh = await tempWorkspace(false)
    try {
      await writeFile(path.join(fresh.dir, 'blocker'), 'a file where a directory is needed')
      const run = generateBootstrapData(
        testOptions(fresh.dir, { machine: 'cp-0', output: path.join(fresh.dir, 'blocker/out/') }),
        await testDeps(await fixtureText()),
      )
      const err = await run.then(
        () => undefined,
        (e: unknown) => e as Error & { hint?: string },
      )
      expect(err?.message).to.match(/writing .*blocker\/out\/.*: .*ENOTDIR/)
      expect(err?.hint).to.match(/removed the \d+ files? this run had written/)
      expect(await readdir(fresh.dir)).to.deep.equal(['blocker'])
    } finally {
      await fresh.cleanup()
    }
  })

  it('names that would leave the output directory are refused before anything is written', async () => {
    const input = (await fixtureText()).replaceAll('name: cp-0', 'name: ../../escaped')
    const run = generateBootstrapData(testOptions(ws.dir), await testDeps(input))
    await expect(run).to.be.rejectedWith(/metadata\.name: "\.\.\/\.\.\/escaped" is not a valid name/)
    expect((await readdir(ws.dir)).sort()).to.deep.equal(['pki'])
    expect(await readdir(path.dirname(ws.dir))).not.to.include('escaped.cloud-config')
  })
})
