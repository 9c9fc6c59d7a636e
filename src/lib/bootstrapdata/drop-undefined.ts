/** Leaves unset fields out of a rendered section, so documents carry only what the input set. */
export function dropUndefined(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined))
}
