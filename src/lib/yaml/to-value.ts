/**
 * A parsed YAML document to plain values, in one pass. The yaml package's own toJS resolves each
 * alias by scanning the document (quadratic with many aliases), throws untyped ReferenceErrors
 * (unresolved or excessive aliases) and returns cycles for `&a [*a]`; here every such case is a
 * Problem at the node's position, duplicate keys are found with a Set per map (the package's
 * `uniqueKeys` compares each key with every earlier one), and aliases share their anchor's value.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type Node, type Pair } from 'yaml'
import type { KeyPath } from './index.js'

/** Nodes that aliases may add to a document, beyond its own; more is an alias bomb. */
export const MAX_ALIAS_EXPANSION_NODES = 100_000

export interface NodeProblem {
  path: KeyPath
  message: string
  /** Offset in the source text. */
  offset: number | undefined
}

/** Thrown for an alias problem, after which no value can be built. */
export class AliasProblem extends Error {
  constructor(readonly problem: NodeProblem) {
    super(problem.message)
  }
}

interface Converted {
  value: unknown
  /** Nodes this value stands for once every alias inside it is expanded. */
  expandedNodes: number
}

/** The document's value plus every duplicate-key or key-shape problem; throws AliasProblem. */
export function documentToValue(doc: Document): { value: unknown; problems: NodeProblem[] } {
  const problems: NodeProblem[] = []
  const anchors = new Map<string, Node>() // the latest definition of each name, in document order
  const done = new Map<Node, Converted>()
  const inProgress = new Set<Node>()
  let aliasNodes = 0

  const convert = (node: Node | null | undefined, path: KeyPath): Converted => {
    if (node === null || node === undefined) return { value: null, expandedNodes: 1 }
    if (isAlias(node)) return resolveAlias(node.source, node.range?.[0], path)
    if (node.anchor) anchors.set(node.anchor, node)
    inProgress.add(node)
    const result = isMap(node)
      ? convertPairs(node.items, path)
      : isSeq(node)
        ? convertSeq(node.items, path)
        : isScalar(node)
          ? { value: node.value, expandedNodes: 1 }
          : { value: null, expandedNodes: 1 }
    inProgress.delete(node)
    if (node.anchor) done.set(node, result)
    return result
  }

  const resolveAlias = (name: string, offset: number | undefined, path: KeyPath): Converted => {
    const target = anchors.get(name)
    if (!target)
      throw new AliasProblem({ path, offset, message: `alias *${name} has no anchor &${name} before it` })
    if (inProgress.has(target))
      throw new AliasProblem({ path, offset, message: `alias *${name} refers to a node that contains it` })
    const converted = done.get(target) as Converted
    aliasNodes += converted.expandedNodes
    if (aliasNodes > MAX_ALIAS_EXPANSION_NODES) {
      throw new AliasProblem({
        path,
        offset,
        message: `aliases expand to more than ${MAX_ALIAS_EXPANSION_NODES} nodes here (a YAML alias bomb?)`,
      })
    }
    return converted
  }

  const convertSeq = (items: readonly unknown[], path: KeyPath): Converted => {
    const value: unknown[] = []
    let expandedNodes = 1
    items.forEach((item, index) => {
      // A pair in a flow sequence (`[a: 1]`) is a one-key map, as YAML says.
      const got = isPair(item)
        ? convertPairs([item], [...path, index])
        : convert(item as Node, [...path, index])
      value.push(got.value)
      expandedNodes += got.expandedNodes
    })
    return { value, expandedNodes }
  }

  const convertPairs = (pairs: readonly Pair[], path: KeyPath): Converted => {
    const value: Record<string, unknown> = {}
    let expandedNodes = 1
    for (const pair of pairs) {
      const keyNode = pair.key as Node | null
      const key = keyOf(keyNode)
      const offset = keyNode?.range?.[0]
      if (key === undefined) {
        problems.push({ path, offset, message: 'a key must be a string, number or boolean' })
        continue
      }
      const got = convert(pair.value as Node | null, [...path, key])
      expandedNodes += got.expandedNodes
      if (Object.hasOwn(value, key)) {
        problems.push({ path: [...path, key], offset, message: 'duplicate key' })
        continue
      }
      // defineProperty: a `__proto__` key stays a plain key instead of replacing the prototype
      Object.defineProperty(value, key, {
        value: got.value,
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
    return { value, expandedNodes }
  }

  const { value } = convert(doc.contents, [])
  return { value, problems }
}

/** The key string a plain-object map uses; undefined for a collection used as a key. */
export function keyOf(node: Node | null): string | undefined {
  if (node === null) return ''
  if (isScalar(node)) return node.value === null ? '' : String(node.value)
  return undefined
}
