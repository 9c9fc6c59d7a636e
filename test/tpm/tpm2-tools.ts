/** Running tpm2-tools against a test's swtpm, and the file formats they use for credentials. */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { MadeCredential } from '../../src/lib/tpm/index.js'
import type { SwtpmHandle } from '../support/swtpm.js'

const run = promisify(execFile)

/** tpm2-tools in `cwd`, talking to the swtpm (TCTI swtpm: needs the control port at port + 1). */
export function tpm2Tools(tpm: SwtpmHandle, cwd: string) {
  return (cmd: string, args: readonly string[]) =>
    run(cmd, [...args], {
      cwd,
      env: { ...process.env, TPM2TOOLS_TCTI: `swtpm:host=${tpm.host},port=${tpm.port}` },
    })
}

/** tpm2_makecredential's output: magic 0xBADCC0DE, version 1, TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET. */
const TSS2_CREDENTIAL_MAGIC = 0xbadcc0de
const TSS2_CREDENTIAL_VERSION = 1

export function encodeTss2Credential(made: MadeCredential): Buffer {
  const header = Buffer.alloc(8)
  header.writeUInt32BE(TSS2_CREDENTIAL_MAGIC, 0)
  header.writeUInt32BE(TSS2_CREDENTIAL_VERSION, 4)
  const sized = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b])
  return Buffer.concat([header, sized(made.credentialBlob), sized(made.encryptedSecret)])
}

export function decodeTss2Credential(file: Buffer): MadeCredential {
  if (file.readUInt32BE(0) !== TSS2_CREDENTIAL_MAGIC) throw new Error('not a TSS2 credential file (magic)')
  if (file.readUInt32BE(4) !== TSS2_CREDENTIAL_VERSION) throw new Error('unknown TSS2 credential version')
  let offset = 8
  const take = () => {
    const size = file.readUInt16BE(offset)
    const out = file.subarray(offset + 2, offset + 2 + size)
    if (out.length !== size) throw new Error('truncated TSS2 credential file')
    offset += 2 + size
    return out
  }
  const credentialBlob = take()
  const encryptedSecret = take()
  if (offset !== file.length) throw new Error('trailing bytes in TSS2 credential file')
  return { credentialBlob, encryptedSecret }
}

/** A TPM2B_PUBLIC file (tpm2-tools' "tss" format) from a TPMT_PUBLIC, and back. */
export const tpm2bPublic = (publicArea: Buffer) =>
  Buffer.concat([Buffer.from([publicArea.length >> 8, publicArea.length & 0xff]), publicArea])
export function publicAreaOf(tpm2b: Buffer): Buffer {
  const size = tpm2b.readUInt16BE(0)
  if (tpm2b.length !== 2 + size) throw new Error('not a TPM2B_PUBLIC file')
  return tpm2b.subarray(2)
}
