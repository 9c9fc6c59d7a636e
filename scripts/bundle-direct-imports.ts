/**
 * An esbuild plugin for scripts/bundle.ts: in the bundle, `import { a, b } from '../x/index.js'`
 * becomes imports of the files that define a and b. Code outside a domain reaches it through its
 * index.ts (the architecture tests hold the sources to that), but esbuild follows every re-export
 * of an index that any entry uses: each node process loaded the union of what all commands need
 * through the domain façades (a mini node's supervisor: 2.8 MB of code for the 0.55 MB it runs).
 * An index holds only re-exports (test/architecture/index-facades.test.ts), so the rewrite changes
 * nothing but what is loaded. An import that names anything the index does not re-export by
 * name (`export *`) is left as written.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { Plugin } from 'esbuild'

/** name exported by a façade → the file (absolute, as written: `.js`) and the name there. */
type FacadeMap = Map<string, { file: string; name: string }>

const REEXPORT = /export\s+(type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/g
const IMPORT = /^import\s+\{([^}]*)\}\s+from\s+'([^']+\/index\.js)'/gm

/** `a`, `type b`, `c as d` → [name, local] pairs of the values (types are erased: nothing to load). */
function valueSpecs(list: string): Array<[string, string]> {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && !s.startsWith('type '))
    .map((s) => {
      const [name = s, local = name] = s.split(/\s+as\s+/)
      return [name, local]
    })
}

function facadeMap(indexFile: string): FacadeMap {
  const map: FacadeMap = new Map()
  for (const [, typeOnly, names = '', from = ''] of readFileSync(indexFile, 'utf8').matchAll(REEXPORT)) {
    if (typeOnly) continue
    for (const [name, exported] of valueSpecs(names))
      map.set(exported, { file: path.resolve(path.dirname(indexFile), from), name })
  }
  return map
}

/** `import('pkg')` of a package by its bare name (an external of the bundle), with its quote. */
const PACKAGE_IMPORT = /\bimport\((['"])([^'"./][^'"]*)\1\)/g

/**
 * `packageImportsVia`: the function a dynamic import of a package the bundle leaves out
 * (`external`) becomes, `f('pkg')`, for bundles that bin/code-cache.js runs as a vm script, which
 * cannot import() on Node 20 (the loader can). A package the bundle takes in stays `import('pkg')`:
 * esbuild bundles it and loads it with require, under the bundle's code cache.
 */
export function directImports(
  srcRoot: string,
  opts: { packageImportsVia?: string; external?: readonly string[] } = {},
): Plugin {
  const isExternal = (pkg: string) =>
    (opts.external ?? []).some((e) => (e.endsWith('/*') ? pkg.startsWith(e.slice(0, -1)) : pkg === e))
  const facades = new Map<string, FacadeMap>()
  const facadeOf = (file: string) => {
    if (!facades.has(file)) facades.set(file, facadeMap(file.replace(/\.js$/, '.ts')))
    return facades.get(file)!
  }
  const lib = path.join(srcRoot, 'lib') + path.sep
  return {
    name: 'direct-imports',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(srcRoot + path.sep)) return undefined
        const source = readFileSync(args.path, 'utf8')
        const dir = path.dirname(args.path)
        const contents = source.replace(IMPORT, (statement: string, names: string, from: string) => {
          const index = path.resolve(dir, from)
          // only another domain's façade, not one's own (a domain imports its own files directly)
          if (!index.startsWith(lib) || path.dirname(index) === dir) return statement
          const map = facadeOf(index)
          const byFile = new Map<string, string[]>()
          for (const [imported, local] of valueSpecs(names)) {
            const target = map.get(imported)
            if (!target) return statement
            const rel = path.relative(dir, target.file)
            const file = rel.startsWith('.') ? rel : `./${rel}`
            byFile.set(file, [
              ...(byFile.get(file) ?? []),
              target.name === local ? local : `${target.name} as ${local}`,
            ])
          }
          const imports = [...byFile].map(([file, list]) => `import { ${list.join(', ')} } from '${file}'`)
          // as many lines as the statement had: the source map's lines stay the file's own
          return imports.join('; ') + '\n'.repeat(statement.split('\n').length - 1)
        })
        const via = opts.packageImportsVia
        return {
          contents: via
            ? contents.replace(PACKAGE_IMPORT, (m: string, q: string, pkg: string) =>
                isExternal(pkg) ? `${via}(${q}${pkg}${q})` : m,
              )
            : contents,
          loader: 'ts',
        }
      })
    },
  }
}
