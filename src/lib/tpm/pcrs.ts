/** One TPM session at a time (withTpm), and the PCR reads, extends and shutdown a node boot needs. */
import { pcrExtend, pcrRead, shutdown } from './commands.js'
import type { OpenTpm, TpmTransport } from './transport.js'

/** Opens the TPM, runs fn, and closes it whatever happens. */
export async function withTpm<T>(open: OpenTpm, fn: (t: TpmTransport) => Promise<T>): Promise<T> {
  const t = await open()
  try {
    return await fn(t)
  } finally {
    await t.close()
  }
}

/** SHA-256 bank. */
export function readPcrs(open: OpenTpm, indices: readonly number[]): Promise<Map<number, Buffer>> {
  return withTpm(open, (t) => pcrRead(t, indices))
}

/** TPM2_Shutdown(CLEAR), as an operating system sends it before the power goes off. */
export function shutdownTpm(open: OpenTpm): Promise<void> {
  return withTpm(open, shutdown)
}

/** TPM2_PCR_Extend on the SHA-256 bank with a 32-byte digest. */
export function extendPcr(open: OpenTpm, index: number, digest: Buffer): Promise<void> {
  return withTpm(open, (t) => pcrExtend(t, index, digest))
}
