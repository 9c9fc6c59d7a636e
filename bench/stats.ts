/** Small statistics helpers shared by the benchmarks. */
export function summarize(samplesMs: number[]) {
  const sorted = [...samplesMs].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  const round = (x: number) => Math.round(x * 100) / 100
  return {
    runs: sorted.length,
    medianMs: round(at(0.5)),
    p90Ms: round(at(0.9)),
    p99Ms: round(at(0.99)),
    minMs: round(sorted[0] ?? NaN),
  }
}

export async function timeRuns(runs: number, fn: () => Promise<void>): Promise<number[]> {
  const samples: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint()
    await fn()
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  return samples
}
