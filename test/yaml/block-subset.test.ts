/**
 * The fast reader for the block subset must give exactly what the full loader gives (value and
 * the position of every key path), or decline. The full loader here is the yaml package's
 * Document with the loader's own conversion and locator, which parseYamlDocuments uses for
 * everything the fast reader declines.
 */
import { parseDocument } from 'yaml'
import { defaultConfig } from '../../src/lib/config/generate.js'
import { readBlockSubset } from '../../src/lib/yaml/block-subset.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { createOffsetLocator } from '../../src/lib/yaml/locate.js'
import { documentToValue } from '../../src/lib/yaml/to-value.js'
import { expect } from '../support/chai.js'
import { seededRandom } from '../support/fuzz.js'

type Path = Array<string | number>

/** Every path to a node of `value`, plus one missing key below each map (located at its parent). */
function pathsOf(value: unknown, path: Path = []): Path[] {
  const paths: Path[] = [path]
  if (Array.isArray(value)) value.forEach((v, i) => paths.push(...pathsOf(v, [...path, i])))
  else if (value !== null && typeof value === 'object') {
    paths.push([...path, 'no-such-key'], [...path, 'no-such-key', 'below'])
    for (const [k, v] of Object.entries(value)) paths.push(...pathsOf(v, [...path, k]))
  }
  return paths
}

/** Asserts agreement with the full loader; returns whether the fast reader took the text. */
function agreesWithFullLoader(text: string, name: string): boolean {
  const fast = readBlockSubset(text)
  if (!fast) return false
  const doc = parseDocument(text, { uniqueKeys: false })
  expect(doc.errors, `${name}: the full loader has errors the fast reader missed`).to.deep.equal([])
  const full = documentToValue(doc)
  expect(full.problems, `${name}: problems the fast reader missed`).to.deep.equal([])
  expect(fast.value, `${name}: value`).to.deep.equal(full.value)
  const offsetOf = createOffsetLocator(doc)
  for (const path of pathsOf(full.value)) {
    expect(fast.offsetOf(path), `${name}: offset of ${JSON.stringify(path)}`).to.equal(offsetOf(path))
  }
  return true
}

describe('YAML block-subset reader', () => {
  const taken: Record<string, string> = {
    'the generated config': stringifyYaml(
      defaultConfig({ kubernetes: 'v1.31', variant: 'qemu-vtpm', name: 'subset' }),
    ),
    'scalars of every core type':
      'a: 1\nb: -2.5\nc: 0x1F\nd: 0o17\ne: .inf\nf: -.Inf\ng: .nan\nh: 1e3\n' +
      'i: true\nj: False\nk: ~\nl: null\nm: NULL\nn: 2001-12-14\no: "q"\np: \'s\'\nq: +1\nr: 1_000\ns: 1.\n',
    'keys that resolve': '1: a\ntrue: b\nnull: c\n1.50: d\n0x10: e\n"quoted": f\n\'single\': g\na:b: h\n',
    'empty values and comments':
      '# head\na:\nb:   # c\nc: x # trailing\nd: "y"   # c\n\n  # indented comment\ne: []\nf: {}\n',
    'nesting, compact maps in sequences':
      'a:\n  b:\n    - x\n    -\n    - y: 1\n      z:\n        - 2\n    - - ignored?\n',
    "a sequence at its key's indent": 'k:\n- 1\n- a: 2\n  b: 3\nnext: 4\n',
    'a root sequence': '- a\n- b: 1\n-\n',
    'an indented root': '  a: 1\n  b:\n    c: 2\n',
    'odd plain scalars': 'a: b#c\nb: x:y\nc: ?q\nd: :colon\ne: -dash\nf: a, b, [c]\ng: 100%\nh: ünïcode ✓\n',
    'a __proto__ key': '__proto__: 1\nx: {}\n',
  }
  for (const [name, text] of Object.entries(taken)) {
    it(`agrees with the full loader on ${name}`, () => {
      // "nesting…" ends with a line outside the subset: the reader declines the whole text
      if (name.startsWith('nesting')) expect(agreesWithFullLoader(text, name)).to.equal(false)
      else expect(agreesWithFullLoader(text, name), `${name}: taken`).to.equal(true)
    })
  }

  const declined: Record<string, string> = {
    'an anchor and alias': 'a: &x 1\nb: *x\n',
    'a tag': 'a: !!str 1\n',
    'a flow collection': 'a: [1, 2]\n',
    'a block scalar': 'a: |\n  text\n',
    'a multi-line plain scalar': 'a: one\n  two\n',
    'a multi-line quoted scalar': 'a: "one\n  two"\n',
    'an escape in double quotes': 'a: "\\n"\n',
    'a doubled single quote': "a: 'it''s'\n",
    'a duplicate key': 'a: 1\na: 2\n',
    'a second document': 'a: 1\n---\nb: 2\n',
    'a document marker': '---\na: 1\n',
    'a tab': 'a:\t1\n',
    'CRLF line ends': 'a: 1\r\nb: 2\r\n',
    'a merge key': '<<: 1\n',
    'a nested map on one line': 'a: b: c\n',
    'a scalar document': 'just text\n',
    'an empty document': '# nothing\n',
    'a key over 1000 characters': `${'k'.repeat(1500)}: 1\n`,
    'a bad indent': 'a:\n    b: 1\n  c: 2\n',
    'deep nesting': Array.from({ length: 150 }, (_, i) => `${' '.repeat(i)}k:`).join('\n'),
  }
  for (const [name, text] of Object.entries(declined)) {
    it(`declines ${name}`, () => expect(readBlockSubset(text)).to.equal(undefined))
  }

  it('agrees with the full loader on line-level mutations of a config, or declines them', () => {
    const next = seededRandom(34)
    const int = (n: number) => Math.floor(next() * n)
    const base = stringifyYaml(defaultConfig({ kubernetes: 'v1.31', variant: 'qemu-vtpm', name: 'm' })).split(
      '\n',
    )
    const edits = [' ', '  ', '- ', '# ', 'k: ', ': ', ' #', '"', "'", '~', '0x1', '-', '[]', '{}', 'true']
    let tookAny = 0
    for (let i = 0; i < 300; i++) {
      const lines = [...base]
      for (let n = int(3) + 1; n > 0; n--) {
        const at = int(lines.length)
        const line = lines[at] ?? ''
        const col = int(line.length + 1)
        lines[at] = line.slice(0, col) + (edits[int(edits.length)] as string) + line.slice(col + int(3))
      }
      if (agreesWithFullLoader(lines.join('\n'), `mutation ${i}`)) tookAny++
    }
    expect(tookAny).to.be.greaterThan(50)
  })
})
