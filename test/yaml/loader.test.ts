import { execFileSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { CliError } from '../../src/lib/errors/index.js'
import { parseYaml, parseYamlDocuments, readYamlFile, YamlProblemsError } from '../../src/lib/yaml/index.js'

const LAUGHS = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]']
for (const [i, name] of ['b', 'c', 'd', 'e', 'f', 'g', 'h'].entries()) {
  const prev = 'abcdefg'[i] as string
  LAUGHS.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`)
}

describe('YAML loader', () => {
  const refused: Record<string, { text: string; want: string; one?: boolean }> = {
    'an alias bomb, at the alias that crosses the limit': {
      text: LAUGHS.join('\n'),
      want: 'f.yaml:6:8: f[0]: aliases expand to more than 100000 nodes here (a YAML alias bomb?)',
    },
    'an alias inside its own anchor (a cycle)': {
      text: 'a: &a [*a]',
      want: 'f.yaml:1:8: a[0]: alias *a refers to a node that contains it',
    },
    'an alias without an anchor': {
      text: 'x: 1\na: *b',
      want: 'f.yaml:2:4: a: alias *b has no anchor &b before it',
    },
    'a duplicate key, nested': { text: 'a:\n  c: 1\n  c: 2', want: 'f.yaml:3:3: a.c: duplicate key' },
    'a collection as a key': { text: '[a]: 1', want: 'f.yaml:1:1: (document): a key must be a string' },
    'a syntax error': { text: 'a: [', want: 'f.yaml:1:5: (document): Flow sequence' },
    'an empty file where one document is expected': {
      text: '# only a comment\n',
      want: 'f.yaml:1:1: (document): expected one YAML document, found 0',
      one: true,
    },
    'a second document': {
      text: 'a: 1\n---\nb: 2\n',
      want: 'f.yaml:3:1: (document): expected one YAML document, found 2',
      one: true,
    },
    'nesting deeper than the parser can go': { text: '['.repeat(5000) + ']'.repeat(5000), want: 'f.yaml:1:' },
  }
  for (const [name, tc] of Object.entries(refused)) {
    it(`refuses ${name} with file:line:col`, () => {
      const err = catchError(() => (tc.one ? parseYaml : parseYamlDocuments)(tc.text, 'f.yaml'))
      expect(err).to.be.instanceOf(YamlProblemsError)
      expect((err as CliError).exitCode).to.equal(1)
      expect((err as Error).message).to.contain(tc.want)
    })
  }

  it('keeps `__proto__` a plain key and lets aliases share their anchor value', () => {
    const [doc] = parseYamlDocuments('__proto__: {polluted: 1}\nx: &x {k: v}\ny: *x\nz: [a: 1]', 'f.yaml')
    const value = doc?.value as Record<string, unknown>
    expect(Object.keys(value)).to.deep.equal(['__proto__', 'x', 'y', 'z'])
    expect(Object.getPrototypeOf(value)).to.equal(Object.prototype)
    expect(value.y).to.deep.equal({ k: 'v' })
    expect(value.z).to.deep.equal([{ a: 1 }])
  })

  it('lists the first 50 problems in its message and keeps them all', () => {
    const text = Array.from({ length: 120 }, (_, i) => `k: ${i}`).join('\n')
    const err = catchError(() => parseYamlDocuments(text, 'f.yaml')) as YamlProblemsError
    expect(err.problems).to.have.length(119)
    expect(err.message.split('\n')).to.have.length(1 + 50 + 1)
    expect(err.message).to.match(/f\.yaml:51:1: k: duplicate key\n {2}… and 69 more$/)
  })

  it('locates problems deep in a large document', () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `key${i}: {v: ${i}}`)
    const [doc] = parseYamlDocuments(lines.join('\n'), 'f.yaml')
    expect(doc?.locate(['key19999', 'v'])).to.deep.equal({ line: 20000, column: 12 })
    expect(doc?.locate(['key123'])).to.deep.equal({ line: 124, column: 1 })
  })
})

describe('readYamlFile', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> }
  before(async () => (tmp = await makeTempDir()))
  after(async () => tmp.cleanup())

  const read = (file: string, maxBytes?: number) => readYamlFile(file, { what: 'config', maxBytes })

  it('refuses a file over the cap, naming the file, its size and the cap', async () => {
    const file = path.join(tmp.dir, 'big.yaml')
    await writeFile(file, 'a: 1\n'.repeat(300))
    await expect(read(file, 1000)).to.be.rejectedWith(
      CliError,
      `config ${file} is too large: 1500 bytes, the limit is 1000 bytes`,
    )
    expect(await read(file, 1500)).to.have.length(1500)
  })

  it('refuses a FIFO without waiting for a writer', async () => {
    const fifo = path.join(tmp.dir, 'fifo')
    execFileSync('mkfifo', [fifo])
    await expect(read(fifo)).to.be.rejectedWith(
      CliError,
      `config ${fifo} is not a regular file (it is a FIFO)`,
    )
  })

  it('refuses a directory and a device', async () => {
    const dir = path.join(tmp.dir, 'd')
    await mkdir(dir)
    await expect(read(dir)).to.be.rejectedWith(CliError, 'is not a regular file (it is a directory)')
    await expect(read('/dev/zero')).to.be.rejectedWith(CliError, 'is not a regular file (it is a device)')
  })

  it('says when the file does not exist', async () => {
    await expect(read(path.join(tmp.dir, 'none.yaml'))).to.be.rejectedWith(CliError, 'does not exist')
  })
})

function catchError(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('expected an error')
}
