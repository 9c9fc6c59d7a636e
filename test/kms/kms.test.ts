import { hkdfSync } from 'node:crypto'
import { chmod, stat, readFile, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import {
  ClusterKms,
  clusterKmsUri,
  deriveClusterId,
  encodeMasterSecret,
  generateMasterSecret,
  NO_STORE_URI,
  parseClusterKmsUri,
  readMasterSecret,
  readNodeMasterSecret,
  writeMasterSecret,
} from '../../src/lib/kms/index.js'
import { CliError } from '../../src/lib/errors/index.js'
import { KmsUriError } from '../../src/lib/kms/uri.js'
import { deriveKey } from '../../src/lib/kms/hkdf.js'
import { parseMasterSecret } from '../../src/lib/kms/master-secret.js'

const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex')

describe('kms', () => {
  describe('deriveKey (RFC 5869 SHA-256 test vectors)', () => {
    const cases: Record<string, { ikm: Buffer; salt: Buffer; info: Buffer; length: number; okm: string }> = {
      'test case 1': {
        ikm: hex('0b'.repeat(22)),
        salt: hex('000102030405060708090a0b0c'),
        info: hex('f0f1f2f3f4f5f6f7f8f9'),
        length: 42,
        okm: '3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865',
      },
      'test case 2 (long inputs)': {
        ikm: Buffer.from(Array.from({ length: 80 }, (_, i) => i)),
        salt: Buffer.from(Array.from({ length: 80 }, (_, i) => 0x60 + i)),
        info: Buffer.from(Array.from({ length: 80 }, (_, i) => 0xb0 + i)),
        length: 82,
        okm:
          'b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09' +
          'da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87',
      },
      'test case 3 (empty salt and info)': {
        ikm: hex('0b'.repeat(22)),
        salt: Buffer.alloc(0),
        info: Buffer.alloc(0),
        length: 42,
        okm: '8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8',
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        expect(deriveKey(tc.ikm, tc.salt, tc.info, tc.length).toString('hex')).to.equal(tc.okm)
      })
    }
    it('uses the info bytes as UTF-8 and prefixes data keys with "key-"', () => {
      const kms = new ClusterKms(hex('aa'.repeat(32)), hex('bb'.repeat(32)))
      const want = Buffer.from(
        hkdfSync('sha256', hex('aa'.repeat(32)), hex('bb'.repeat(32)), 'key-measurementSecret', 32),
      )
      expect(kms.measurementSecret().equals(want)).to.equal(true)
    })
    it('lower-cases the disk UUID for the disk key', () => {
      const kms = new ClusterKms(hex('01'.repeat(32)), hex('02'.repeat(32)))
      const uuid = 'ABCDEF01-2345-6789-ABCD-EF0123456789'
      expect(kms.diskKey(uuid).equals(kms.deriveDataKey(uuid.toLowerCase()))).to.equal(true)
      expect(kms.diskKey(uuid).equals(kms.deriveDataKey(uuid))).to.equal(false)
    })
    it('derives the cluster ID from measurement secret and salt with info key-clusterID', () => {
      const secret = hex('03'.repeat(32))
      const salt = hex('04'.repeat(32))
      const want = Buffer.from(hkdfSync('sha256', secret, salt, 'key-clusterID', 32))
      expect(deriveClusterId(secret, salt).equals(want)).to.equal(true)
    })
  })

  describe('KMS URI', () => {
    const secret = { key: Buffer.alloc(32, 0xfb), salt: Buffer.alloc(32, 0xff) }
    it('round-trips through URL-safe base64 with padding', () => {
      const uri = clusterKmsUri(secret)
      expect(uri).to.match(/^kms:\/\/cluster-kms\?key=[A-Za-z0-9_-]+=&salt=[A-Za-z0-9_-]+=$/)
      const got = parseClusterKmsUri(uri)
      expect(got.key.equals(secret.key)).to.equal(true)
      expect(got.salt.equals(secret.salt)).to.equal(true)
    })
    const bad: Record<string, { uri: string; want: RegExp }> = {
      'not a URL': { uri: 'cluster-kms', want: /not a URL/ },
      'wrong scheme': { uri: 'storage://cluster-kms?key=AA&salt=AA', want: /scheme "storage"/ },
      'other backend': { uri: 'kms://aws?key=AA&salt=AA', want: /backend "aws"/ },
      'no key': { uri: `kms://cluster-kms?salt=${'A'.repeat(44)}`, want: /no key parameter/ },
      'short key': { uri: `kms://cluster-kms?key=AAAA&salt=${'A'.repeat(44)}`, want: /key is 3 bytes/ },
      'short salt': { uri: `kms://cluster-kms?key=${'A'.repeat(44)}&salt=AAAA`, want: /salt is 3 bytes/ },
      'standard base64': {
        uri: `kms://cluster-kms?key=${'+'.repeat(44)}&salt=AAAA`,
        want: /key is not URL-safe/,
      },
    }
    const key44 = 'A'.repeat(43) + '='
    Object.assign(bad, {
      'an empty key': { uri: `kms://cluster-kms?key=&salt=${key44}`, want: /^KMS URI has no key parameter$/ },
      'no salt': { uri: `kms://cluster-kms?key=${key44}`, want: /^KMS URI has no salt parameter$/ },
      // Buffer.from(…, 'base64url') skips the '!' silently: the node would get another master key
      'a key with a non-base64 character inside': {
        uri: `kms://cluster-kms?key=${'A'.repeat(20)}!${'A'.repeat(23)}&salt=${key44}`,
        want: /^KMS URI key is not URL-safe base64$/,
      },
      'a salt with a non-base64 character at the end': {
        uri: `kms://cluster-kms?key=${key44}&salt=${'A'.repeat(43)}!`,
        want: /^KMS URI salt is not URL-safe base64$/,
      },
      'a key one byte short of the minimum': {
        uri: `kms://cluster-kms?key=${Buffer.alloc(15).toString('base64url')}&salt=${key44}`,
        want: /^KMS URI key is 15 bytes, want at least 16$/,
      },
    })
    for (const [name, tc] of Object.entries(bad)) {
      it(`refuses ${name}`, () => {
        expect(() => parseClusterKmsUri(tc.uri))
          .to.throw(KmsUriError, tc.want)
          .with.property('name', 'KmsUriError')
      })
    }
    it('accepts a key and salt of exactly the minimum length (16 and 32 bytes)', () => {
      const min = { key: Buffer.alloc(16, 1), salt: Buffer.alloc(32, 2) }
      expect(parseClusterKmsUri(clusterKmsUri(min))).to.deep.equal(min)
    })
    it('names the no-store storage URI as Constellation does', () => {
      expect(NO_STORE_URI).to.equal('storage://no-store')
    })
    it('never puts the key into an error message', () => {
      const uri = `kms://cluster-kms?key=${Buffer.alloc(32, 7).toString('base64url')}=&salt=AAAA`
      try {
        parseClusterKmsUri(uri)
        expect.fail('should throw')
      } catch (err) {
        expect(String(err)).not.to.include(Buffer.alloc(32, 7).toString('base64url'))
      }
    })
  })

  describe('master secret file', () => {
    it('writes {key, salt} in standard base64, 0600, and refuses to clobber', async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const file = path.join(dir, 'constellation-mastersecret.json')
        const secret = generateMasterSecret()
        expect(secret.key).to.have.length(32)
        expect(secret.salt).to.have.length(32)
        await writeMasterSecret(file, secret)
        expect((await stat(file)).mode & 0o777).to.equal(0o600)
        const text = await readFile(file, 'utf8')
        const parsed = parseMasterSecret(text, file)
        expect(parsed.key.equals(secret.key)).to.equal(true)
        expect(JSON.parse(text)).to.deep.equal({
          key: secret.key.toString('base64'),
          salt: secret.salt.toString('base64'),
        })
        await expect(writeMasterSecret(file, generateMasterSecret())).to.be.rejectedWith(/already exists/)
        expect(await readFile(file, 'utf8')).to.equal(text)
      } finally {
        await cleanup()
      }
    })
    it('reads an existing file back only when it is a regular file its owner alone can read', async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const file = path.join(dir, 'constellation-mastersecret.json')
        expect(await readMasterSecret(file)).to.equal(undefined)
        const secret = generateMasterSecret()
        await writeMasterSecret(file, secret)
        expect(await readMasterSecret(file)).to.deep.equal(secret)
        await chmod(file, 0o644)
        await expect(readMasterSecret(file)).to.be.rejectedWith(
          `${file} is mode 0644, want 0600: others could read it`,
        )
        const link = path.join(dir, 'link.json')
        await symlink(file, link)
        await expect(readMasterSecret(link)).to.be.rejectedWith(`${link} is not a regular file`)
      } finally {
        await cleanup()
      }
    })
    it('writes the file tab-indented, as Constellation does', () => {
      expect(encodeMasterSecret({ key: Buffer.from([1]), salt: Buffer.from([2]) })).to.equal(
        '{\n\t"key": "AQ==",\n\t"salt": "Ag=="\n}\n',
      )
    })
    const b64 = (n: number) => Buffer.alloc(n, 9).toString('base64')
    const broken: Record<string, { text: string; want: string }> = {
      'not JSON': { text: 'nope', want: 'ms.json: not JSON' },
      'JSON null': { text: 'null', want: 'ms.json: key: want standard base64' },
      'a number for the key': {
        text: `{"key":123,"salt":"${b64(32)}"}`,
        want: 'ms.json: key: want standard base64',
      },
      'a non-base64 character inside the key': {
        text: `{"key":"${b64(32).slice(0, 20)}!${b64(32).slice(20)}","salt":"${b64(32)}"}`,
        want: 'ms.json: key: want standard base64',
      },
      'a non-base64 character after the salt': {
        text: `{"key":"${b64(32)}","salt":"${b64(32)}!"}`,
        want: 'ms.json: salt: want standard base64',
      },
      'only punctuation': { text: '{"key":"!!","salt":"AA=="}', want: 'ms.json: key: want standard base64' },
      'a key of 31 bytes': {
        text: `{"key":"${b64(31)}","salt":"${b64(32)}"}`,
        want: 'ms.json: key: want 32 bytes, got 31',
      },
      'an unpadded key of 33 bytes': {
        text: `{"key":"${b64(33)}","salt":"${b64(32)}"}`,
        want: 'ms.json: key: want 32 bytes, got 33',
      },
      'a salt of 34 bytes (two pad characters)': {
        text: `{"key":"${b64(32)}","salt":"${b64(34)}"}`,
        want: 'ms.json: salt: want 32 bytes, got 34',
      },
    }
    for (const [name, tc] of Object.entries(broken)) {
      it(`refuses a master secret file with ${name}, naming the field`, () => {
        expect(() => parseMasterSecret(tc.text, 'ms.json')).to.throw(CliError, new RegExp(`^${tc.want}$`))
      })
    }
    it('says what a master secret file looks like when it is not JSON', () => {
      expect(() => parseMasterSecret('nope', 'ms.json'))
        .to.throw(CliError)
        .with.property('hint', 'a master secret is {"key": "<base64>", "salt": "<base64>"}')
    })
    it('tells how to fix a readable or linked master secret file', async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const file = path.join(dir, 'constellation-mastersecret.json')
        await writeMasterSecret(file, generateMasterSecret())
        await chmod(file, 0o640)
        await expect(readMasterSecret(file))
          .to.be.rejectedWith(CliError)
          .and.eventually.have.property('hint', `chmod 600 ${file}, then run init again`)
        await writeFile(file, Buffer.alloc(70_000))
        await chmod(file, 0o600)
        await expect(readMasterSecret(file)).to.be.rejectedWith(
          CliError,
          `${file} is too large for a master secret: 70000 bytes`,
        )
        const link = path.join(dir, 'link.json')
        await symlink(file, link)
        await expect(readMasterSecret(link))
          .to.be.rejectedWith(CliError)
          .and.eventually.have.property(
            'hint',
            'replace it with the file itself; it may hold the keys of a cluster: do not delete it unless you know no node used it',
          )
      } finally {
        await cleanup()
      }
    })
    it('names the bad field of a broken file', async () => {
      expect(() => parseMasterSecret('{"key":"!!","salt":"AA=="}', 'ms.json')).to.throw(/ms.json: key/)
      expect(() => parseMasterSecret('nope', 'ms.json')).to.throw(/ms.json: not JSON/)
      expect(encodeMasterSecret({ key: Buffer.from([1]), salt: Buffer.from([2]) })).to.include(
        '"key": "AQ=="',
      )
    })
  })

  describe("a node's persisted master secret", () => {
    const withFiles = async (
      key: Buffer | undefined,
      salt: Buffer | undefined,
      fn: (files: { masterSecretFile: string; masterSaltFile: string }) => Promise<void>,
    ) => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const files = {
          masterSecretFile: path.join(dir, 'mastersecret'),
          masterSaltFile: path.join(dir, 'salt'),
        }
        if (key) await writeFile(files.masterSecretFile, key, { mode: 0o600 })
        if (salt) await writeFile(files.masterSaltFile, salt, { mode: 0o600 })
        await fn(files)
      } finally {
        await cleanup()
      }
    }
    it('reads a key and salt of exactly the minimum lengths (16 and 32 bytes)', () =>
      withFiles(Buffer.alloc(16, 1), Buffer.alloc(32, 2), async (files) => {
        expect(await readNodeMasterSecret(files)).to.deep.equal({
          key: Buffer.alloc(16, 1),
          salt: Buffer.alloc(32, 2),
        })
      }))
    it('refuses a key one byte short, naming the file and the lengths', () =>
      withFiles(Buffer.alloc(15, 1), Buffer.alloc(32, 2), async (files) => {
        await expect(readNodeMasterSecret(files)).to.be.rejectedWith(
          CliError,
          `master secret file ${files.masterSecretFile} is malformed: 15 bytes, want at least 16`,
        )
      }))
    it('refuses a salt one byte short', () =>
      withFiles(Buffer.alloc(16, 1), Buffer.alloc(31, 2), async (files) => {
        await expect(readNodeMasterSecret(files)).to.be.rejectedWith(
          CliError,
          `master secret file ${files.masterSaltFile} is malformed: 31 bytes, want at least 32`,
        )
      }))
    it('says where a missing file comes from', () =>
      withFiles(undefined, Buffer.alloc(32, 2), async (files) => {
        const err = await readNodeMasterSecret(files).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(err).to.be.instanceOf(CliError)
        expect((err as CliError).message).to.equal(
          `master secret file ${files.masterSecretFile} does not exist`,
        )
        expect((err as CliError).hint).to.equal(
          'a node writes it when init succeeds on it or it joins as a control plane; run the key service on such a node, with the same root in its node config',
        )
      }))
    it('tells how to fix a readable or linked file', () =>
      withFiles(Buffer.alloc(16, 1), Buffer.alloc(32, 2), async (files) => {
        await chmod(files.masterSecretFile, 0o644)
        await expect(readNodeMasterSecret(files))
          .to.be.rejectedWith(CliError)
          .and.eventually.have.property(
            'hint',
            `chmod 600 ${files.masterSecretFile}, then start the key service again`,
          )
        await writeFile(files.masterSaltFile, Buffer.alloc(70_000))
        await expect(
          readNodeMasterSecret({ ...files, masterSecretFile: files.masterSaltFile }),
        ).to.be.rejectedWith(
          CliError,
          `${files.masterSaltFile} is too large for a master secret: 70000 bytes`,
        )
        const link = path.join(path.dirname(files.masterSaltFile), 'salt-link')
        await symlink(files.masterSaltFile, link)
        await chmod(files.masterSecretFile, 0o600)
        await expect(readNodeMasterSecret({ ...files, masterSaltFile: link }))
          .to.be.rejectedWith(CliError)
          .and.eventually.have.property(
            'hint',
            'the node writes it as a regular file; replace the entry with the file itself',
          )
      }))
  })
})
