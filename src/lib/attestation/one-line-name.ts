/**
 * A certificate's subject or issuer on one line, for a message: node:crypto puts one attribute per
 * line, and gives no name at all (undefined, though typed string) for an empty one.
 */
export const oneLine = (name: string | undefined) => (name ?? '').split('\n').join(', ') || '(empty name)'
