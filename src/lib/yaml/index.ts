/**
 * The one YAML loader. It keeps source positions, so every problem found later (schema or
 * semantic) can name the file, the key path and the line:column where it sits.
 */
import {
  LineCounter,
  parseAllDocuments,
  isMap,
  isSeq,
  isScalar,
  stringify,
  type Document,
  type Node,
} from 'yaml'
import { CliError, ExitCode } from '../errors/index.js'

export type KeyPath = ReadonlyArray<string | number>

export interface Problem {
  path: KeyPath
  message: string
}

export interface Located extends Problem {
  line?: number
  column?: number
}

export interface YamlSource {
  file: string
  /** Document index in a multi-document stream (0 for single documents). */
  index: number
  value: unknown
  /** Line and column (1-based) of the value at `path`, or of its closest existing parent. */
  locate(path: KeyPath): { line: number; column: number } | undefined
}

/** Raised for any YAML syntax or validation problem; lists all problems, each with its place. */
export class YamlProblemsError extends CliError {
  constructor(
    readonly file: string,
    readonly problems: readonly Located[],
  ) {
    super(
      `${file} is not valid:\n${problems.map((p) => '  ' + formatProblem(file, p)).join('\n')}`,
      ExitCode.Failure,
    )
    this.name = 'YamlProblemsError'
  }
}

export function formatPath(path: KeyPath): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out ? `.${part}` : part
  }
  return out || '(document)'
}

export function formatProblem(file: string, p: Located): string {
  const at = p.line !== undefined ? `${file}:${p.line}:${p.column ?? 1}` : file
  return `${at}: ${formatPath(p.path)}: ${p.message}`
}

/** Parses every document of a YAML stream; syntax errors are thrown with their positions. */
export function parseYamlDocuments(text: string, file: string): YamlSource[] {
  const lineCounter = new LineCounter()
  const docs = parseAllDocuments(text, { lineCounter, uniqueKeys: true, prettyErrors: false })
  if (!Array.isArray(docs)) return [] // an empty stream parses to an EmptyStream
  const problems: Located[] = []
  for (const doc of docs) {
    for (const err of doc.errors) {
      const pos = lineCounter.linePos(err.pos[0])
      problems.push({
        path: [],
        message: err.message.split('\n')[0] ?? err.message,
        line: pos.line,
        column: pos.col,
      })
    }
  }
  if (problems.length > 0) throw new YamlProblemsError(file, problems)
  return docs
    .filter((d) => d.contents !== null)
    .map((doc, index) => ({
      file,
      index,
      value: doc.toJS({ maxAliasCount: 100 }) as unknown,
      locate: (path: KeyPath) => locate(doc, lineCounter, path),
    }))
}

/** Parses a file that must hold exactly one YAML document. */
export function parseYaml(text: string, file: string): YamlSource {
  const docs = parseYamlDocuments(text, file)
  if (docs.length !== 1) {
    throw new YamlProblemsError(file, [
      { path: [], message: `expected one YAML document, found ${docs.length}` },
    ])
  }
  return docs[0] as YamlSource
}

/** Attaches positions to problems and throws them together; returns when there are none. */
export function throwIfProblems(source: YamlSource, problems: readonly Problem[]): void {
  if (problems.length === 0) return
  throw new YamlProblemsError(
    source.file,
    problems.map((p) => ({ ...p, ...source.locate(p.path) })),
  )
}

export function stringifyYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false })
}

function locate(doc: Document, lc: LineCounter, path: KeyPath) {
  let node: Node | null | undefined = doc.contents as Node | null
  let best = node?.range?.[0]
  for (const part of path) {
    if (isMap(node)) {
      const pair = node.items.find((it) => isScalar(it.key) && String(it.key.value) === String(part))
      if (!pair) break
      const keyNode = pair.key as Node
      best = keyNode.range?.[0] ?? best
      node = pair.value as Node | null
      if (node?.range && path[path.length - 1] !== part) best = node.range[0]
    } else if (isSeq(node) && typeof part === 'number') {
      node = node.items[part] as Node | undefined
      if (!node) break
      best = node.range?.[0] ?? best
    } else break
  }
  if (best === undefined) return undefined
  const pos = lc.linePos(best)
  return { line: pos.line, column: pos.col }
}
