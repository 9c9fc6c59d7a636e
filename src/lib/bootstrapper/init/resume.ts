/**
 * The rules a resume meets before an initialized node answers it again: the caller proves the init
 * secret (bcrypt, as Init) and the master secret (resume_proof, bound to this node's own attested
 * handshake). Each wrong one makes its address wait before its next try, doubling (as the recovery
 * endpoint does), so secrets cannot be tested fast; refusals change nothing on the node.
 */
import type { InitRequest } from '../../../gen/init.js'
import { checkInitSecret, resumeProofKey, resumeProofMatches, RESUME_PROOF_BYTES } from '../../kms/index.js'
import { InitSecretError } from './init-node.js'
import type { InitResultKeeper } from './init-result.js'

/** Resumes waiting for their secrets' check (bcrypt), all addresses together; one per address. */
export const RESUME_LIMITS = { queued: 4, queuedPerPeer: 1 } as const

export const isResumeRequest = (req: InitRequest): boolean => req.resumeProof.length > 0

/** There is no answer to hand over: the node was never initialized, or a caller has it already. */
export class NothingToResumeError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'NothingToResumeError'
  }
}

/** The proof of the master secret failed; the caller learns nothing else. */
export class ResumeProofError extends Error {
  constructor(message: string) {
    super(`resume refused: ${message}`)
    this.name = 'ResumeProofError'
  }
}

/** Why a resume finds nothing, checked before any secret (it tells nothing PCR 15 does not). */
export function nothingToResume(keeper: InitResultKeeper): NothingToResumeError | undefined {
  switch (keeper.state) {
    case 'none':
      return new NothingToResumeError(
        'this node was not initialized, so there is nothing to resume; send a full Init request',
      )
    case 'handed-over':
      return new NothingToResumeError(
        "this node's Init answer was handed over already; the node keeps no copy to hand over again",
      )
    default:
      return undefined
  }
}

/** The certificate keys the init server attested lately (AttestedKeys). */
export interface AttestedKeySet {
  /** True once for a key attested lately: a proof bound to it is good for one resume. */
  take(key: Buffer): boolean
}

export interface ResumeCheckDeps {
  initSecretHash: string
  keeper: InitResultKeeper
  attestedKeys: AttestedKeySet
}

/** Resolves when the caller proved both secrets; throws InitSecretError or ResumeProofError. */
export async function checkResume(req: InitRequest, deps: ResumeCheckDeps): Promise<void> {
  if (!(await checkInitSecret(req.initSecret, deps.initSecretHash))) throw new InitSecretError()
  const bound = resumeProofKey(req.resumeProof)
  if (!bound)
    throw new ResumeProofError(`resume_proof is ${req.resumeProof.length} bytes, want ${RESUME_PROOF_BYTES}`)
  const key = deps.keeper.resumeKey
  // the MAC first: a caller without the master secret never spends a genuine handshake's key
  if (!key || !resumeProofMatches(key, req.resumeProof))
    throw new ResumeProofError('the proof does not match the master secret this node was initialized with')
  if (!deps.attestedKeys.take(bound))
    throw new ResumeProofError(
      'the proof is bound to a certificate key this node did not attest in the last minute (a proof made for another server, or used already)',
    )
}
