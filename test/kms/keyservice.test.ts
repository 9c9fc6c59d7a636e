import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/cli.js'
import { readNodeMasterSecret } from '../../src/lib/kms/index.js'
import { writeServiceSecrets } from '../../src/lib/bootstrapper/node-state.js'
import { nodePaths, type NodePaths } from '../../src/lib/paths.js'

const masterSecret = { key: Buffer.alloc(32, 0x5a), salt: Buffer.alloc(32, 0xa5) }

describe('key service', () => {
  describe('the master secret a node persisted', () => {
    let dir: string
    let cleanup: () => Promise<void>
    let paths: NodePaths
    beforeEach(async () => {
      ;({ dir, cleanup } = await makeTempDir())
      paths = nodePaths(dir)
      await writeServiceSecrets(paths, {
        masterSecret: masterSecret.key,
        salt: masterSecret.salt,
        measurementSecret: Buffer.alloc(32, 1),
        measurementSalt: Buffer.alloc(32, 2),
      })
    })
    afterEach(() => cleanup())

    it('reads what init wrote on the node', async () => {
      expect(await readNodeMasterSecret(paths)).to.deep.equal(masterSecret)
    })

    it('accepts a file only its owner can read, even without write access (0400)', async () => {
      await chmod(paths.masterSecretFile, 0o400)
      expect(await readNodeMasterSecret(paths)).to.deep.equal(masterSecret)
    })

    type File = 'masterSecretFile' | 'masterSaltFile'
    const refused: Record<string, { file: File; spoil: (file: string) => Promise<void>; says: string }> = {
      'a master secret readable by others (0644)': {
        file: 'masterSecretFile',
        spoil: (f) => chmod(f, 0o644),
        says: 'is mode 0644, want 0600: others could read it',
      },
      'a master secret readable by its group (0640)': {
        file: 'masterSecretFile',
        spoil: (f) => chmod(f, 0o640),
        says: 'is mode 0640, want 0600',
      },
      'a salt writable by others (0602)': {
        file: 'masterSaltFile',
        spoil: (f) => chmod(f, 0o602),
        says: 'is mode 0602, want 0600',
      },
      'a symlink to the real file': {
        file: 'masterSecretFile',
        spoil: async (f) => {
          await writeFile(`${f}.real`, masterSecret.key, { mode: 0o600 })
          await rmAndLink(`${f}.real`, f)
        },
        says: 'is not a regular file',
      },
      'a directory': {
        file: 'masterSaltFile',
        spoil: async (f) => {
          await rm(f)
          await mkdir(f, { mode: 0o700 })
        },
        says: 'is not a regular file',
      },
      'a missing master secret': {
        file: 'masterSecretFile',
        spoil: (f) => rm(f),
        says: 'does not exist',
      },
      'a master secret shorter than 16 bytes': {
        file: 'masterSecretFile',
        spoil: (f) => writeFile(f, Buffer.alloc(15, 0x5a)),
        says: 'is malformed: 15 bytes, want at least 16',
      },
      'an empty salt': {
        file: 'masterSaltFile',
        spoil: (f) => writeFile(f, ''),
        says: 'is malformed: 0 bytes, want at least 32',
      },
    }
    for (const [name, tc] of Object.entries(refused)) {
      it(`refuses ${name}, naming the file`, async () => {
        const file = paths[tc.file]
        await tc.spoil(file)
        const err = await readNodeMasterSecret(paths).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(Error)
        expect((err as Error).message)
          .to.include(file)
          .and.include(tc.says)
        expect((err as Error).message).to.not.include(masterSecret.key.toString('hex'))
      })
    }
  })
})

async function rmAndLink(target: string, link: string): Promise<void> {
  await rm(link)
  await symlink(target, link)
}
