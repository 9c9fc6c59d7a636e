/**
 * The TPM's dictionary-attack state: how many failures it counted, how many it allows, and whether
 * it refuses DA-protected authorizations now (TPM_RC_LOCKOUT, 0x921). docs/protocol.md §6 says
 * which of a node's TPM uses could count, and why none does.
 */
import { TPM_PT_DA, TPMA_PERMANENT_IN_LOCKOUT } from './constants.js'
import { TpmError } from './errors.js'
import { getTpmProperty } from './nv.js'
import type { TpmTransport } from './transport.js'

export interface DictionaryAttackState {
  /** TPM_PT_LOCKOUT_COUNTER: failures counted (each power cut after a DA-protected use is one). */
  lockoutCounter: number
  /** TPM_PT_MAX_AUTH_FAIL: the count at which the TPM locks out. */
  maxTries: number
  /** TPM_PT_LOCKOUT_INTERVAL: seconds after which one counted failure is forgiven. */
  recoveryTimeS: number
  /** TPMA_PERMANENT.inLockout. */
  inLockout: boolean
}

export async function readDictionaryAttackState(t: TpmTransport): Promise<DictionaryAttackState> {
  const read = async (property: number, name: string) => {
    const value = await getTpmProperty(t, property)
    if (value === undefined) throw new TpmError(`the TPM does not report ${name}`)
    return value
  }
  return {
    lockoutCounter: await read(TPM_PT_DA.LOCKOUT_COUNTER, 'TPM_PT_LOCKOUT_COUNTER'),
    maxTries: await read(TPM_PT_DA.MAX_AUTH_FAIL, 'TPM_PT_MAX_AUTH_FAIL'),
    recoveryTimeS: await read(TPM_PT_DA.LOCKOUT_INTERVAL, 'TPM_PT_LOCKOUT_INTERVAL'),
    inLockout: ((await read(TPM_PT_DA.PERMANENT, 'TPM_PT_PERMANENT')) & TPMA_PERMANENT_IN_LOCKOUT) !== 0,
  }
}
