/** Leaves unset fields out of a rendered section, so documents carry only what the input set. */
export function dropUndefined<T extends Record<string, unknown>>(obj: T): T {
  return dropWhere(obj, (v) => v === undefined)
}

/** Like dropUndefined, and also drops "": a value joined from an empty list is not set either. */
export function dropEmpty<T extends Record<string, unknown>>(obj: T): T {
  return dropWhere(obj, (v) => v === undefined || v === '')
}

// The result keeps T's type: every dropped key was unset, which T's optional keys allow.
function dropWhere<T extends Record<string, unknown>>(obj: T, unset: (v: unknown) => boolean): T {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => !unset(v))) as T
}
