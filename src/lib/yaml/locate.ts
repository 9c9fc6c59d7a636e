/** Key path to source offset, with each map's keys indexed once (a scan per lookup was quadratic); offset to line and column. */
import { isMap, isSeq, type Document, type Node, type Pair, type YAMLMap } from 'yaml'
import type { KeyPath } from './index.js'
import { keyOf } from './to-value.js'

/** Returns a function giving the offset of the value at a path, or of its closest existing parent. */
export function createOffsetLocator(doc: Document): (path: KeyPath) => number | undefined {
  const indexes = new WeakMap<YAMLMap, Map<string, Pair>>()
  const pairsOf = (map: YAMLMap) => {
    let index = indexes.get(map)
    if (!index) {
      index = new Map()
      for (const pair of map.items) {
        const key = keyOf(pair.key as Node | null)
        if (key !== undefined && !index.has(key)) index.set(key, pair)
      }
      indexes.set(map, index)
    }
    return index
  }
  return (path) => {
    let node: Node | null | undefined = doc.contents
    let best = node?.range?.[0]
    for (const [i, part] of path.entries()) {
      if (isMap(node)) {
        const pair = pairsOf(node).get(String(part))
        if (!pair) break
        best = (pair.key as Node | null)?.range?.[0] ?? best
        node = pair.value as Node | null
        // a problem with a key is shown at the key; one inside its value, at the value
        if (node?.range && i < path.length - 1) best = node.range[0]
      } else if (isSeq(node) && typeof part === 'number') {
        node = node.items[part] as Node | undefined
        if (!node) break
        best = node.range?.[0] ?? best
      } else break
    }
    return best
  }
}

/** Offset to 1-based line and column (as the yaml package's LineCounter), lines indexed on first use. */
export function lineAndColumn(text: string): (offset: number) => { line: number; column: number } {
  let lineStarts: number[] | undefined
  return (offset) => {
    if (!lineStarts) {
      lineStarts = [0]
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lineStarts.push(i + 1)
    }
    let low = 0
    let high = lineStarts.length - 1
    while (low < high) {
      const mid = (low + high + 1) >> 1
      if ((lineStarts[mid] as number) <= offset) low = mid
      else high = mid - 1
    }
    return { line: low + 1, column: offset - (lineStarts[low] as number) + 1 }
  }
}
