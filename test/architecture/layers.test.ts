/**
 * The house rules of src/ (docs/architecture.md): a domain imports only domains in lower layers,
 * and code outside a domain reaches it only through its index.ts.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { GENERATED, LIB, SRC, tsFiles } from './source-tree.js'
import { LAYERS, layerOf } from './layer-order.js'

/** Relative module specifiers of static imports, re-exports and dynamic imports. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const found = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1]!)
  return found.map((spec) => path.resolve(path.dirname(file), spec))
}

/** The lib domain a path belongs to, or undefined outside src/lib/<domain>/. */
function domainOf(file: string): string | undefined {
  const rel = path.relative(LIB, file)
  if (rel.startsWith('..')) return undefined
  const parts = rel.split(path.sep)
  return parts.length > 1 ? parts[0] : undefined
}

const edges = tsFiles(SRC, [GENERATED]).flatMap((from) => importsOf(from).map((to) => ({ from, to })))
const crossDomain = edges.filter((e) => domainOf(e.to) !== undefined && domainOf(e.to) !== domainOf(e.from))
const show = (e: { from: string; to: string }) =>
  `${path.relative(SRC, e.from)} -> ${path.relative(SRC, e.to)}`

describe('architecture: layers and import rule', () => {
  it('every lib domain is placed in exactly one layer', () => {
    const domains = readdirSync(LIB, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
    const placed = LAYERS.flat()
    expect(
      domains.filter((d) => !placed.includes(d)),
      'domains missing from LAYERS',
    ).to.deep.equal([])
    expect(
      placed.filter((d) => !domains.includes(d)),
      'LAYERS names no such domain',
    ).to.deep.equal([])
    expect(new Set(placed).size, 'a domain listed twice').to.equal(placed.length)
  })

  it('a domain imports only domains in lower layers', () => {
    const upward = crossDomain.filter((e) => {
      const from = domainOf(e.from)
      return from !== undefined && layerOf(domainOf(e.to)!) >= layerOf(from)
    })
    expect(upward.map(show)).to.deep.equal([])
  })

  it('code outside a domain reaches it only through its index.ts', () => {
    const internal = crossDomain.filter(
      (e) => path.basename(e.to) !== 'index.js' || path.dirname(e.to) !== path.join(LIB, domainOf(e.to)!),
    )
    expect(internal.map(show)).to.deep.equal([])
  })

  it('lib never imports the commands, the entries or the wiring', () => {
    const generated = path.join(SRC, 'gen') + path.sep
    // the one storage layout the simulator domain shares with the kubeadm fake (plain JS, shipped)
    const apiLayout = path.resolve(SRC, '../simulator/api-layout.js')
    const out = edges.filter(
      (e) =>
        domainOf(e.from) !== undefined &&
        !e.to.startsWith(LIB + path.sep) &&
        !e.to.startsWith(generated) &&
        !(domainOf(e.from) === 'simulator' && e.to === apiLayout),
    )
    expect(out.map(show)).to.deep.equal([])
  })
})
