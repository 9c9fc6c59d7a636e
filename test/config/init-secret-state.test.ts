/**
 * An init secret's hex can be all digits, or digits around one `e` (its bytes are ASCII letters and
 * digits, whose hex starts with 3–7): YAML then quotes it, as it would read back as a number. The
 * state keeps it a string, and every reader goes through the loader; a regex on the text missed
 * the quoted form (a flaky "invalid init secret" in the init tests, about once in 1,700 workspaces).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { initSecretHashFor, loadState } from '../../src/lib/config/index.js'
import { defaultState } from '../../src/lib/config/generate.js'
import { checkInitSecret } from '../../src/lib/kms/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { readInitSecret } from '../support/init-secret.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

describe('config: an init secret whose hex reads as a number', () => {
  let dir: TempDir
  beforeEach(async () => (dir = await makeTempDir('constell-init-secret-')))
  afterEach(() => dir.cleanup())

  const cases: Record<string, string> = {
    'all digits (YAML would read an integer)': '01234567890123456789012345678901',
    "digits around one 'e' (YAML would read a float)": '0123456789N123456789012345678901', // N = 0x4e
  }
  for (const [name, secretText] of Object.entries(cases)) {
    it(name, async () => {
      const secret = Buffer.from(secretText, 'latin1')
      const ws = path.join(dir.dir, 'ws')
      await mkdir(ws)
      const text = stringifyYaml(defaultState('constell', '127.0.0.1', (n) => Buffer.alloc(n, 1), secret))
      expect(text, 'YAML quotes the hex').to.include(`initSecret: "${secret.toString('hex')}"`)
      await writeFile(workspacePaths(ws).state, text, { mode: 0o600 })
      expect((await loadState(workspacePaths(ws).state)).infrastructure.initSecret).to.equal(
        secret.toString('hex'),
      )
      expect(await readInitSecret(ws)).to.deep.equal(secret)
      const { initSecretHash } = await initSecretHashFor(ws)
      expect(await checkInitSecret(secret, initSecretHash)).to.equal(true)
    })
  }
})
