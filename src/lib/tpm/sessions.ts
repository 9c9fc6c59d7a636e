/** Policy sessions: the way to use an object whose auth is a policy, such as an endorsement key. */
import { randomBytes } from 'node:crypto'
import { TpmWriter } from './buffer.js'
import { TPM_ALG, TPM_RH, TPM_SE_POLICY } from './constants.js'
import { flushContext, runCommand } from './commands.js'
import { TpmError } from './errors.js'
import type { TpmTransport } from './transport.js'

/** The TPM wants 16 bytes at least, and at most the session hash's digest size. */
const NONCE_CALLER_BYTES = 16

/** TPM2_StartAuthSession for an unsalted, unbound policy session; returns its handle. */
export async function startPolicySession(
  t: TpmTransport,
  authHash: number = TPM_ALG.SHA256,
): Promise<number> {
  const params = new TpmWriter()
    .sized(randomBytes(NONCE_CALLER_BYTES))
    .sized(Buffer.alloc(0)) // encryptedSalt: unsalted
    .u8(TPM_SE_POLICY)
    .u16(TPM_ALG.NULL) // symmetric: no parameter encryption
    .u16(authHash)
    .toBuffer()
  const { handles } = await runCommand(t, {
    name: 'StartAuthSession',
    handles: [TPM_RH.NULL, TPM_RH.NULL],
    params,
    responseHandles: 1,
  })
  const handle = handles[0]
  if (handle === undefined) throw new TpmError('TPM2_StartAuthSession returned no handle')
  return handle
}

/** TPM2_PolicySecret: proves knowledge of authHandle's (empty) password to the policy session. */
export async function policySecret(t: TpmTransport, session: number, authHandle: number): Promise<void> {
  const params = new TpmWriter()
    .sized(Buffer.alloc(0)) // nonceTPM: no freshness binding
    .sized(Buffer.alloc(0)) // cpHashA: any command
    .sized(Buffer.alloc(0)) // policyRef
    .u32(0) // expiration: none
    .toBuffer()
  await runCommand(t, { name: 'PolicySecret', handles: [authHandle, session], authorized: 1, params })
}

/** TPM2_PolicyOR: the session's digest, one of `branches`, becomes their OR (at most 8 branches). */
export async function policyOr(t: TpmTransport, session: number, branches: readonly Buffer[]): Promise<void> {
  const params = new TpmWriter().u32(branches.length)
  for (const branch of branches) params.sized(branch)
  await runCommand(t, { name: 'PolicyOR', handles: [session], params: params.toBuffer() })
}

/**
 * A policy session satisfying PolicySecret(TPM_RH_ENDORSEMENT), the EK Credential Profile's policy A,
 * for one command; with `orBranches` (policy A among them) followed by their PolicyOR, as the
 * profile's policy B of the high-range EKs. The session is flushed afterwards whatever happens (no
 * resource manager on swtpm).
 */
export async function withEndorsementPolicy<T>(
  t: TpmTransport,
  authHash: number,
  fn: (session: number) => Promise<T>,
  orBranches?: readonly Buffer[],
): Promise<T> {
  const session = await startPolicySession(t, authHash)
  try {
    await policySecret(t, session, TPM_RH.ENDORSEMENT)
    if (orBranches) await policyOr(t, session, orBranches)
    return await fn(session)
  } finally {
    await flushContext(t, session)
  }
}
