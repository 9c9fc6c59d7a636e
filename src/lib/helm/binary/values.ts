/** Chart values: merging as Helm merges -f files, and the changes an upgrade makes to a release's values. */
export type Values = Record<string, unknown>

/** Recursive map merge; later maps win, lists are replaced (Helm's own rule for -f files). */
export function mergeValues(base: Values, over: Values): Values {
  const out: Values = { ...base }
  for (const [k, v] of Object.entries(over)) {
    const prev = out[k]
    out[k] = isValues(prev) && isValues(v) ? mergeValues(prev, v) : v
  }
  return out
}

export const isValues = (v: unknown): v is Values => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Which keys an upgrade adds or changes (dotted paths, leaves only). Values themselves are left out:
 * a release's values may hold secrets, and the plan is printed.
 */
export interface ValueChanges {
  added: string[]
  changed: string[]
}

export function valueChanges(before: Values, after: Values, prefix = ''): ValueChanges {
  const out: ValueChanges = { added: [], changed: [] }
  for (const [k, v] of Object.entries(after)) {
    const key = prefix + k
    const old = before[k]
    if (isValues(v) && isValues(old)) {
      const inner = valueChanges(old, v, `${key}.`)
      out.added.push(...inner.added)
      out.changed.push(...inner.changed)
    } else if (!(k in before)) out.added.push(key)
    else if (JSON.stringify(old) !== JSON.stringify(v)) out.changed.push(key)
  }
  return out
}
