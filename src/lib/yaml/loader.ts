/**
 * The one YAML loader. It keeps source positions, so every problem found later (schema or
 * semantic) can name the file, the key path and the line:column where it sits.
 */
import { LineCounter, parseAllDocuments, stringify, type Document } from 'yaml'
import { CliError, messageOf } from '../errors/index.js'
import { readRegularFile } from '../system/index.js'
import { readBlockSubset } from './block-subset.js'
import { createOffsetLocator, lineAndColumn } from './locate.js'
import { AliasProblem, documentToValue, type NodeProblem } from './to-value.js'

/** The largest YAML file the loader reads unless its caller sets another limit. */
export const MAX_YAML_FILE_BYTES = 4 * 1024 * 1024

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

/** Problems a message lists; `problems` keeps them all (a file of unknown keys has thousands). */
export const MAX_LISTED_PROBLEMS = 50

/** Raised for any YAML syntax or validation problem, with every problem and its place. */
export class YamlProblemsError extends CliError {
  constructor(
    readonly file: string,
    readonly problems: readonly Located[],
  ) {
    // only the listed ones are formatted: a file of unknown keys has tens of thousands
    const listed = problems.slice(0, MAX_LISTED_PROBLEMS).map((p) => formatProblem(file, p))
    super(`${file} is not valid:\n${listLines(listed, problems.length)}`)
    this.name = 'YamlProblemsError'
  }
}

/** Indented lines, at most MAX_LISTED_PROBLEMS of them, then how many more there are of `total`. */
export function listLines(lines: readonly string[], total = lines.length): string {
  const shown = lines.slice(0, MAX_LISTED_PROBLEMS).map((l) => '  ' + l)
  if (total > shown.length) shown.push(`  … and ${total - shown.length} more`)
  return shown.join('\n')
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

export interface ReadYamlOptions {
  /** What the file is, for messages ("config", "values file"). */
  what: string
  missingHint?: string
  maxBytes?: number
}

/** Reads a YAML file's text: a regular file of at most `maxBytes` (default MAX_YAML_FILE_BYTES). */
export async function readYamlFile(file: string, opts: ReadYamlOptions): Promise<string> {
  const data = await readRegularFile(file, { maxBytes: MAX_YAML_FILE_BYTES, ...opts })
  return data.toString('utf8')
}

/**
 * Parses every document of a YAML stream. Whatever is wrong (syntax, duplicate keys, aliases that
 * are unresolved, cyclic or explode) is thrown as a YamlProblemsError with positions; nothing else.
 */
export function parseYamlDocuments(text: string, file: string): YamlSource[] {
  // Configs take the fast reader; it declines anything else, and any problem, to the full one.
  const block = readBlockSubset(text)
  if (block) {
    const position = lineAndColumn(text)
    return [{ file, index: 0, value: block.value, locate: (path) => position(block.offsetOf(path)) }]
  }
  const lineCounter = new LineCounter()
  const at = (offset: number | undefined) => {
    if (offset === undefined) return {}
    const pos = lineCounter.linePos(offset)
    return { line: pos.line, column: pos.col }
  }
  let docs: ReturnType<typeof parseAllDocuments>
  try {
    // uniqueKeys off: the package compares every key with every earlier one; to-value.ts checks them
    docs = parseAllDocuments(text, { lineCounter, uniqueKeys: false, prettyErrors: false })
  } catch (err) {
    throw new YamlProblemsError(file, [
      { path: [], message: `cannot parse YAML: ${messageOf(err)}`, line: 1, column: 1 },
    ])
  }
  if (!Array.isArray(docs)) return [] // an empty stream parses to an EmptyStream
  const problems: Located[] = []
  for (const doc of docs) {
    for (const err of doc.errors) {
      problems.push({ path: [], message: err.message.split('\n')[0] ?? err.message, ...at(err.pos[0]) })
    }
  }
  if (problems.length > 0) throw new YamlProblemsError(file, problems)
  const located = (p: NodeProblem): Located => ({ path: p.path, message: p.message, ...at(p.offset) })
  const sources: YamlSource[] = []
  for (const doc of docs.filter((d: Document) => d.contents !== null)) {
    let converted
    try {
      converted = documentToValue(doc)
    } catch (err) {
      if (err instanceof AliasProblem) throw new YamlProblemsError(file, [located(err.problem)])
      const start = (doc.contents as { range?: number[] } | null)?.range?.[0] ?? 0
      throw new YamlProblemsError(file, [
        { path: [], message: `cannot read YAML: ${messageOf(err)}`, ...at(start) },
      ])
    }
    problems.push(...converted.problems.map(located))
    const offsetOf = createOffsetLocator(doc)
    const locate = (path: KeyPath) => {
      const pos = at(offsetOf(path))
      return pos.line === undefined ? undefined : { line: pos.line, column: pos.column }
    }
    sources.push({ file, index: sources.length, value: converted.value, locate })
  }
  if (problems.length > 0) throw new YamlProblemsError(file, problems)
  return sources
}

/** Parses a file that must hold exactly one YAML document. */
export function parseYaml(text: string, file: string): YamlSource {
  const docs = parseYamlDocuments(text, file)
  if (docs.length !== 1) {
    const at = docs[1]?.locate([]) ?? { line: 1, column: 1 } // the second document, or the (empty) start
    throw new YamlProblemsError(file, [
      { path: [], message: `expected one YAML document, found ${docs.length}`, ...at },
    ])
  }
  return docs[0] as YamlSource
}

/** Attaches positions to problems and throws them together; returns when there are none. */
export function throwIfProblems(source: YamlSource, problems: readonly Problem[]): void {
  if (problems.length === 0) return
  throw new YamlProblemsError(
    source.file,
    problems.map((p) => {
      // built, not spread: spreading tens of thousands of problems took most of this function
      const at = source.locate(p.path)
      return at ? { path: p.path, message: p.message, ...at } : { path: p.path, message: p.message }
    }),
  )
}

export function stringifyYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false })
}
