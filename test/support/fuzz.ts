/** Seeded input mutation for parser robustness tests (TPM structures, attestation, certificates, YAML, tar). */
/** Deterministic PRNG (mulberry32) so a failing input can be reproduced from its iteration. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function mutate(input: Buffer, rnd: () => number): Buffer {
  const out = Buffer.from(input)
  switch (Math.floor(rnd() * 4)) {
    case 0: // flip bytes
      for (let i = 0, n = 1 + Math.floor(rnd() * 4); i < n && out.length > 0; i++)
        out[Math.floor(rnd() * out.length)] = Math.floor(rnd() * 256)
      return out
    case 1: // truncate
      return out.subarray(0, Math.floor(rnd() * out.length))
    case 2: // append
      return Buffer.concat([
        out,
        Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => Math.floor(rnd() * 256))),
      ])
    default: // random
      return Buffer.from(Array.from({ length: Math.floor(rnd() * 128) }, () => Math.floor(rnd() * 256)))
  }
}
