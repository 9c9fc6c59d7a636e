/**
 * JSON-Schema checks whose findings come back as Problems with key paths (positions added by the loader).
 * The validators are compiled at development time (`npm run schemas` writes src/gen/schemas.ts):
 * compiling them here cost ~60 ms on the first check of every run.
 */
import type { ErrorObject } from 'ajv'
import type { StandaloneValidate } from '../../gen/schemas.js'
import type { KeyPath, Problem } from './index.js'

export type JsonSchema = Record<string, unknown>

export function checkSchema(validate: StandaloneValidate, value: unknown, prefix: KeyPath = []): Problem[] {
  if (validate(value)) return []
  return dedupe((validate.errors ?? []).filter(isUseful).map((e) => toProblem(e, prefix)))
}

function toProblem(err: ErrorObject, prefix: KeyPath): Problem {
  // concat and push, not spreads: a file of unknown keys makes tens of thousands of these
  const path = prefix.concat(pointerToPath(err.instancePath))
  const params = err.params as Record<string, unknown>
  switch (err.keyword) {
    case 'additionalProperties':
      return { path: path.concat(String(params.additionalProperty)), message: 'unknown key' }
    case 'required':
      return { path: path.concat(String(params.missingProperty)), message: 'required key is missing' }
    case 'enum':
      return {
        path,
        message: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      }
    case 'propertyNames':
      return { path: [...path, String(params.propertyName)], message: 'is not an allowed key here' }
    default:
      return { path, message: err.message ?? err.keyword }
  }
}

// "if"/"oneOf" wrappers and propertyNames' inner pattern repeat what their sub-errors already said.
const isUseful = (err: ErrorObject) =>
  err.keyword !== 'if' && err.keyword !== 'oneOf' && !err.schemaPath.includes('/propertyNames/')

function pointerToPath(pointer: string): Array<string | number> {
  if (!pointer) return []
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg))
}

function dedupe(problems: Problem[]): Problem[] {
  const seen = new Set<string>()
  return problems.filter((p) => {
    // JSON.stringify of each problem was most of a check with 60,000 unknown keys
    let key = p.message
    for (const part of p.path) key += typeof part === 'number' ? `\u0000#${part}` : `\u0000${part}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
