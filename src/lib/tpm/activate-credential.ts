/** TPM2_ActivateCredential: the TPM side of credential activation, answering a verifier's MakeCredential. */
import { TpmWriter } from './buffer.js'
import { runCommand } from './commands.js'
import { TPM_RS_PW } from './constants.js'
import { withEkAuthorization, type EndorsementKey } from './ek.js'
import { CliError, ExitCode } from '../errors/index.js'
import { TpmError } from './errors.js'
import type { MadeCredential } from './make-credential.js'
import { decodeResponseCode, describeResponseCode } from './response-code.js'
import type { TpmTransport } from './transport.js'

/** sizeof(TPMS_ID_OBJECT): two TPM2B_DIGESTs of at most 64 bytes. */
const MAX_CREDENTIAL_BLOB_BYTES = 2 * (2 + 64)
/** Larger than any TPMU_ENCRYPTED_SECRET (RSA 4096: 512 bytes; a P-521 point: 136). */
const MAX_ENCRYPTED_SECRET_BYTES = 512

/** The TPM would not release the credential: it was made for another object or TPM, or was altered. */
export class CredentialActivationError extends CliError {
  /** TPM_RC_<reason>, e.g. "INTEGRITY"; undefined when refused before reaching the TPM. */
  readonly reason?: string
  constructor(
    message: string,
    readonly responseCode?: number,
    cause?: unknown,
  ) {
    super(message, {
      exitCode: ExitCode.AttestationFailed,
      hint: "the challenge must be made with this TPM's EK public key and the Name of the AK the node presented",
      cause,
    })
    this.name = 'CredentialActivationError'
    if (responseCode !== undefined) this.reason = decodeResponseCode(responseCode).name
  }
}

/**
 * Recovers the credential the verifier wrapped for `ak` (loaded, empty password) under `ek`.
 * The EK is authorized per its template (policy session or empty authValue); sessions are flushed.
 */
export async function activateCredential(
  t: TpmTransport,
  ak: { handle: number },
  ek: Pick<EndorsementKey, 'handle' | 'public'>,
  made: MadeCredential,
): Promise<Buffer> {
  checkSize('credential blob', made.credentialBlob, MAX_CREDENTIAL_BLOB_BYTES)
  checkSize('encrypted secret', made.encryptedSecret, MAX_ENCRYPTED_SECRET_BYTES)
  const params = new TpmWriter().sized(made.credentialBlob).sized(made.encryptedSecret).toBuffer()
  try {
    const { params: r } = await withEkAuthorization(t, ek, (session) =>
      runCommand(t, {
        name: 'ActivateCredential',
        handles: [ak.handle, ek.handle],
        sessions: [TPM_RS_PW, session],
        params,
      }),
    )
    return Buffer.from(r.sized('certInfo'))
  } catch (err: unknown) {
    if (err instanceof TpmError && err.responseCode !== undefined)
      throw new CredentialActivationError(
        `activating the credential: the TPM refused it with ${describeResponseCode(err.responseCode)}${explain(err.responseCode)}`,
        err.responseCode,
        err,
      )
    throw err
  }
}

function checkSize(what: string, b: Buffer, max: number): void {
  if (b.length === 0 || b.length > max)
    throw new CredentialActivationError(
      `activating the credential: a ${what} of ${b.length} bytes is impossible (1 to ${max})`,
    )
}

/** What the usual refusals mean for a challenge. */
function explain(rc: number): string {
  const { name, parameter } = decodeResponseCode(rc)
  if (name === 'INTEGRITY' && parameter === 1)
    return ': the credential was made for another AK or another EK, or altered'
  if (parameter === 2) return ': the encrypted secret was not made for this EK, or altered'
  if (parameter === 1) return ': the credential blob is malformed'
  // libtpms answers an RSA-OAEP decryption that fails (a secret for another EK) with FAILURE, and
  // stays usable; a TPM in failure mode would refuse every command that follows
  if (name === 'FAILURE') return ': the encrypted secret does not decrypt with this EK, or the TPM failed'
  return ''
}
