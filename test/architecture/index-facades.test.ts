/**
 * Every lib domain's index.ts is a façade (docs/architecture.md): it re-exports, and holds no code;
 * and every name it re-exports has a production user outside the domain. A name only the domain
 * itself or only tests use stays inside, imported by tests from its own file.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { expect } from '../support/chai.js'
import { GENERATED, LIB, SRC, tsFiles } from './source-tree.js'

const parse = (file: string) =>
  ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false)

const domains = readdirSync(LIB, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
const indexOf = (domain: string) => path.join(LIB, domain, 'index.ts')
const domainOf = (file: string): string | undefined => {
  const rel = path.relative(LIB, file)
  return rel.startsWith('..') || !rel.includes(path.sep) ? undefined : rel.split(path.sep)[0]
}

/** The statements of an index that are not re-exports: code. */
export function codeIn(file: string): string[] {
  const source = parse(file)
  return source.statements
    .filter((s) => !(ts.isExportDeclaration(s) && s.moduleSpecifier && s.exportClause)) // `export *` hides the façade
    .map(
      (s) =>
        `${path.relative(SRC, file)}:${source.getLineAndCharacterOfPosition(s.getStart(source)).line + 1}`,
    )
}

/** The names an index re-exports. */
export function reexportedNames(file: string): string[] {
  return parse(file).statements.flatMap((s) => {
    if (!ts.isExportDeclaration(s) || !s.exportClause || !ts.isNamedExports(s.exportClause)) return []
    return s.exportClause.elements.map((e) => e.name.text)
  })
}

/** domain → the names production code outside it imports from its index (static and dynamic). */
export function namesUsedFromOutside(files: string[]): Map<string, Set<string>> {
  const used = new Map<string, Set<string>>(domains.map((d) => [d, new Set()]))
  for (const file of files) {
    const source = parse(file)
    const target = (spec: string) => {
      const resolved = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts')
      const domain = domainOf(resolved)
      return domain && resolved === indexOf(domain) && domain !== domainOf(file) ? domain : undefined
    }
    const loadedLazily: string[] = []
    const findImports = (node: ts.Node): void => {
      const [arg] = ts.isCallExpression(node) ? node.arguments : []
      if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        arg &&
        ts.isStringLiteral(arg)
      ) {
        const domain = target(arg.text)
        if (domain && !loadedLazily.includes(domain)) loadedLazily.push(domain)
      }
      ts.forEachChild(node, findImports)
    }
    findImports(source)
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const domain = target(node.moduleSpecifier.text)
        const bindings = node.importClause?.namedBindings
        if (domain && bindings && ts.isNamedImports(bindings))
          for (const e of bindings.elements) used.get(domain)!.add((e.propertyName ?? e.name).text)
      }
      // a re-export of another domain's name (`export type { X } from '../x/index.js'`) uses it
      if (
        ts.isExportDeclaration(node) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier) &&
        node.exportClause &&
        ts.isNamedExports(node.exportClause)
      ) {
        const domain = target(node.moduleSpecifier.text)
        if (domain)
          for (const e of node.exportClause.elements) used.get(domain)!.add((e.propertyName ?? e.name).text)
      }
      // `const { a, b } = await import('../x/index.js')`, or `= await preloadX()` in a file whose
      // preloadX() is the one `import('../x/index.js')` in it (a module loaded only when needed)
      if (
        ts.isVariableDeclaration(node) &&
        ts.isObjectBindingPattern(node.name) &&
        node.initializer &&
        ts.isAwaitExpression(node.initializer) &&
        ts.isCallExpression(node.initializer.expression)
      ) {
        const call = node.initializer.expression
        const [arg] = call.arguments
        const domain =
          call.expression.kind === ts.SyntaxKind.ImportKeyword
            ? arg && ts.isStringLiteral(arg)
              ? target(arg.text)
              : undefined
            : call.arguments.length === 0 && loadedLazily.length === 1
              ? loadedLazily[0]
              : undefined
        if (domain)
          for (const e of node.name.elements)
            used.get(domain)!.add(((e.propertyName ?? e.name) as ts.Identifier).text)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return used
}

describe('architecture: every index.ts is a façade', () => {
  const production = tsFiles(SRC, [GENERATED])

  it('an index holds no code, only re-exports', () => {
    expect(domains.flatMap((d) => codeIn(indexOf(d)))).to.deep.equal([])
  })

  it('every re-exported name has a production user outside its domain', () => {
    const used = namesUsedFromOutside(production)
    const unused = domains.flatMap((d) =>
      reexportedNames(indexOf(d))
        .filter((name) => !used.get(d)!.has(name))
        .map((name) => `${d}: ${name}`),
    )
    expect(unused).to.deep.equal([])
  })
})
