/**
 * Fuzzes the YAML loader with a seeded PRNG: documents built from YAML's structural pieces
 * (anchors, aliases, nesting, long keys, flow and block collections) and byte-level mutations
 * of a real config. Every outcome must be a value or a YamlProblemsError whose every problem has
 * a line and column; any other error type is a bug. Bounded by case count and input size, plus a
 * wall-clock budget so a slow machine runs fewer cases instead of timing out.
 * FUZZ_SEED=<n> replays a run; FUZZ_CASES=<n> runs longer.
 */
import { parseYamlDocuments, stringifyYaml, YamlProblemsError } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { seededRandom } from '../support/fuzz.js'
import { parseAllDocuments } from 'yaml'
import { defaultConfig } from '../../src/lib/config/generate.js'

const SEED = Number(process.env.FUZZ_SEED ?? 20251123)
const CASES = Number(process.env.FUZZ_CASES ?? 800)
const MAX_INPUT_CHARS = 64 * 1024
const BUDGET_MS = 5_000

/** The shared seeded PRNG, with the two draws these cases use. */
function prng(seed: number) {
  const next = seededRandom(seed)
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T
  return { next, int, pick }
}
type Rng = ReturnType<typeof prng>

const PIECES = [
  'a',
  'key',
  '"q"',
  "'s'",
  '1',
  '-1.5',
  'true',
  '~',
  '',
  '__proto__',
  '<<',
  '!!str',
  '!t',
  '|',
  '>-',
]

function generate(rng: Rng, depth: number, anchors: string[]): string {
  const roll = rng.int(10)
  if (depth > 6 || roll < 3) {
    // aliases to earlier anchors, to enclosing ones (cycles) and to none at all
    if (rng.int(4) === 0) return `*${rng.pick([...anchors, 'none'])}`
    return rng.pick(PIECES)
  }
  const anchor = rng.int(4) === 0 ? `x${anchors.length}` : undefined
  if (anchor && rng.int(8) === 0) anchors.push(anchor) // visible inside itself: a cycle
  const children = Array.from({ length: rng.int(5) + 1 }, () => generate(rng, depth + 1, anchors))
  const keys = children.map((_, i) =>
    rng.int(8) === 0 ? 'k'.repeat(rng.int(2000)) : rng.pick(['a', 'b', `k${i}`]),
  )
  let out: string
  if (roll < 6) out = `[${children.join(', ')}]`
  else if (roll < 8) out = `{${children.map((c, i) => `${keys[i]}: ${c}`).join(', ')}}`
  else {
    const pad = '  '.repeat(depth + 1)
    out = '\n' + children.map((c, i) => `${pad}${rng.int(2) ? '- ' : `${keys[i]}: `}${c}`).join('\n')
  }
  if (anchor && !anchors.includes(anchor)) anchors.push(anchor)
  return anchor ? `&${anchor} ${out}` : out
}

function mutate(rng: Rng, text: string): string {
  const chars = [...text]
  for (let n = rng.int(8) + 1; n > 0; n--) {
    const at = rng.int(chars.length + 1)
    switch (rng.int(4)) {
      case 0:
        chars.splice(at, 1)
        break
      case 1:
        chars.splice(
          at,
          0,
          rng.pick([':', '-', '[', '{', '&a ', '*a', '\n', '  ', '#', '"', '\t', '\u0000', '?']),
        )
        break
      case 2:
        chars.splice(at, 0, ...chars.slice(rng.int(chars.length), rng.int(chars.length)))
        break
      default:
        chars.splice(at, 0, '['.repeat(rng.int(1500)))
    }
  }
  return chars.join('').slice(0, MAX_INPUT_CHARS)
}

describe('YAML loader fuzz', () => {
  it(`every input gives a value or a located YamlProblemsError (seed ${SEED})`, function () {
    this.timeout(BUDGET_MS * 3)
    const rng = prng(SEED)
    const corpus = stringifyYaml(defaultConfig({ kubernetes: 'v1.31', variant: 'qemu-vtpm', name: 'fuzz' }))
    const started = Date.now()
    const outcomes = { values: 0, problems: 0 }
    for (let i = 0; i < CASES && Date.now() - started < BUDGET_MS; i++) {
      const input =
        rng.int(2) === 0
          ? mutate(rng, corpus)
          : `root: ${generate(rng, 0, [])}\n---\nother: ${generate(rng, 0, [])}`.slice(0, MAX_INPUT_CHARS)
      try {
        const docs = parseYamlDocuments(input, 'fuzz.yaml')
        for (const doc of docs) JSON.stringify(doc.value) // no cycles reach the caller
        // the same values as the yaml package's own conversion, wherever that one succeeds
        const reference = referenceValues(input)
        if (reference)
          expect(
            docs.map((d) => d.value),
            `case ${i}`,
          ).to.deep.equal(reference)
        outcomes.values++
      } catch (err) {
        if (!(err instanceof YamlProblemsError)) {
          throw new Error(
            `case ${i} (FUZZ_SEED=${SEED}) threw ${String(err)} for ${JSON.stringify(input.slice(0, 300))}`,
            { cause: err },
          )
        }
        for (const p of err.problems) expect(p.line, `case ${i}: ${p.message}`).to.be.a('number')
        outcomes.problems++
      }
    }
    // both kinds of outcome occur, so the generator exercises more than the error path
    expect(outcomes.values).to.be.greaterThan(0)
    expect(outcomes.problems).to.be.greaterThan(0)
  })
})

/** The yaml package's toJS of every non-empty document; undefined when it throws. */
function referenceValues(input: string): unknown[] | undefined {
  try {
    const docs = parseAllDocuments(input)
    if (!Array.isArray(docs)) return []
    return docs.filter((d) => d.contents !== null).map((d) => d.toJS({ maxAliasCount: -1 }) as unknown)
  } catch {
    return undefined
  }
}
