/** Work on many items with a bound on how many run at once. */
/**
 * Runs `work` on every item, at most `limit` at a time. After a failure no new item starts and the
 * running ones are told (`failed()`) so they stop at their next step; once all have stopped, the
 * first failure is thrown, so nothing is still writing when the caller reports it.
 */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, failed: () => boolean) => Promise<void>,
) {
  let next = 0
  let failure: { err: unknown } | undefined
  const failed = () => failure !== undefined
  const worker = async () => {
    while (!failure && next < items.length) {
      const item = items[next++] as T
      await work(item, failed).catch((err: unknown) => void (failure ??= { err }))
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failure) throw failure.err
}
