/** TPM 2.0 commands this client needs, each one request/response over an open transport. */
import { retry } from '../system/index.js'
import { TpmReader, TpmWriter } from './buffer.js'
import {
  SHA256_DIGEST_SIZE,
  TPM_ALG,
  TPM_CC,
  TPM_RC,
  TPM_RS_PW,
  TPM_ST,
  TPM_SU_CLEAR,
  TPMA_SESSION_CONTINUE,
} from './constants.js'
import { TpmError } from './errors.js'
import {
  marshalPcrSelection,
  readPcrSelection,
  readPublic,
  readSignature,
  type TpmtPublic,
  type TpmtSignature,
} from './structures.js'
import type { TpmTransport } from './transport.js'

interface CommandSpec {
  name: keyof typeof TPM_CC
  handles?: number[]
  /** Handles that need an authorization (password session, empty password). */
  authorized?: number
  /**
   * Instead of `authorized`: one session per handle that needs an authorization, in handle order,
   * each TPM_RS_PW (empty password) or a policy session that needs no HMAC (e.g. after PolicySecret).
   */
  sessions?: readonly number[]
  params?: Buffer
  /** Handles in the response before the parameters. */
  responseHandles?: number
}

interface CommandResult {
  handles: number[]
  params: TpmReader
}

const TRANSIENT_ATTEMPTS = 10
const TRANSIENT_RCS = new Set<number>([TPM_RC.RETRY, TPM_RC.YIELDED, TPM_RC.TESTING])
const PCRS_PER_READ = 8

export async function runCommand(t: TpmTransport, spec: CommandSpec): Promise<CommandResult> {
  const auths = spec.sessions ?? Array.from({ length: spec.authorized ?? 0 }, () => TPM_RS_PW)
  const sessions = auths.length > 0
  const body = new TpmWriter()
  for (const h of spec.handles ?? []) body.u32(h)
  if (sessions) {
    const auth = new TpmWriter()
    for (const handle of auths) {
      // a policy session keeps going (the caller flushes it); its nonceCaller may be empty
      const attributes = handle === TPM_RS_PW ? 0 : TPMA_SESSION_CONTINUE
      auth.u32(handle).sized(Buffer.alloc(0)).u8(attributes).sized(Buffer.alloc(0))
    }
    const area = auth.toBuffer()
    body.u32(area.length).bytes(area)
  }
  if (spec.params) body.bytes(spec.params)
  const payload = body.toBuffer()
  const cmd = new TpmWriter()
    .u16(sessions ? TPM_ST.SESSIONS : TPM_ST.NO_SESSIONS)
    .u32(10 + payload.length)
    .u32(TPM_CC[spec.name])
    .bytes(payload)
    .toBuffer()
  // TPM_RC_RETRY/YIELDED/TESTING mean "send the same command again"; swtpm answers RETRY now and then
  const { r, tag } = await retry(() => sendOnce(t, spec.name, cmd), {
    attempts: TRANSIENT_ATTEMPTS,
    initialDelayMs: 1,
    maxDelayMs: 20,
    retryable: (err) =>
      err instanceof TpmError && err.responseCode !== undefined && TRANSIENT_RCS.has(err.responseCode),
  })
  const handles: number[] = []
  for (let i = 0; i < (spec.responseHandles ?? 0); i++) handles.push(r.u32('handle'))
  if (tag === TPM_ST.SESSIONS) {
    const paramSize = r.u32('parameterSize')
    return {
      handles,
      params: new TpmReader(r.bytes(paramSize, 'parameters'), `TPM2_${spec.name} parameters`),
    }
  }
  return { handles, params: r }
}

async function sendOnce(t: TpmTransport, name: string, cmd: Buffer): Promise<{ r: TpmReader; tag: number }> {
  const resp = await t.send(cmd)
  const r = new TpmReader(resp, `TPM2_${name} response`)
  const tag = r.u16('tag')
  const size = r.u32('responseSize')
  const rc = r.u32('responseCode')
  if (size !== resp.length) r.fail('responseSize', `${size} does not match the ${resp.length} bytes received`)
  if (rc !== TPM_RC.SUCCESS)
    throw new TpmError(`TPM2_${name} failed with response code 0x${rc.toString(16)}`, rc)
  return { r, tag }
}

export async function startup(t: TpmTransport): Promise<void> {
  await runCommand(t, { name: 'Startup', params: new TpmWriter().u16(TPM_SU_CLEAR).toBuffer() }).catch(
    (err: unknown) => {
      if (err instanceof TpmError && err.responseCode === TPM_RC.INITIALIZE) return
      throw err
    },
  )
}

/**
 * TPM2_Shutdown(CLEAR): what an operating system sends before it powers the machine off. The TPM
 * records an orderly shutdown, so the next startup counts no dictionary-attack failure whatever
 * was used in this boot; any command but Startup fails until then.
 */
export async function shutdown(t: TpmTransport): Promise<void> {
  await runCommand(t, { name: 'Shutdown', params: new TpmWriter().u16(TPM_SU_CLEAR).toBuffer() })
}

export async function getRandom(t: TpmTransport, bytes: number): Promise<Buffer> {
  const { params } = await runCommand(t, { name: 'GetRandom', params: new TpmWriter().u16(bytes).toBuffer() })
  return params.sized('randomBytes')
}

/** SHA-256 bank values of the given PCRs, read in batches of eight (a TPM returns at most eight digests). */
export async function pcrRead(t: TpmTransport, indices: readonly number[]): Promise<Map<number, Buffer>> {
  const out = new Map<number, Buffer>()
  const wanted = [...new Set(indices)].sort((a, b) => a - b)
  for (let i = 0; i < wanted.length; i += PCRS_PER_READ) {
    const batch = wanted.slice(i, i + PCRS_PER_READ)
    const w = new TpmWriter()
    marshalPcrSelection(w, [{ hashAlg: TPM_ALG.SHA256, pcrs: batch }])
    const { params } = await runCommand(t, { name: 'PCR_Read', params: w.toBuffer() })
    params.u32('pcrUpdateCounter')
    const selected = readPcrSelection(params, 'pcrSelectionOut').flatMap((s) => s.pcrs)
    const count = params.u32('pcrValues.count')
    if (count !== selected.length)
      params.fail('pcrValues.count', `${count} digests for ${selected.length} selected PCRs`)
    for (const pcr of selected) out.set(pcr, Buffer.from(params.sized('pcrValues.digest', 64)))
    if (selected.length === 0) throw new TpmError(`TPM has no SHA-256 bank for PCRs ${batch.join(',')}`)
  }
  return out
}

export async function pcrExtend(t: TpmTransport, index: number, digest: Buffer): Promise<void> {
  if (digest.length !== SHA256_DIGEST_SIZE)
    throw new RangeError(`a SHA-256 digest has 32 bytes, got ${digest.length}`)
  const params = new TpmWriter().u32(1).u16(TPM_ALG.SHA256).bytes(digest).toBuffer()
  await runCommand(t, { name: 'PCR_Extend', handles: [index], authorized: 1, params })
}

/** TPM2_PCR_Event: the TPM hashes the event data and extends every bank with it. */
export async function pcrEvent(t: TpmTransport, index: number, data: Buffer): Promise<void> {
  if (data.length > 1024) throw new RangeError('PCR event data is limited to 1024 bytes')
  await runCommand(t, {
    name: 'PCR_Event',
    handles: [index],
    authorized: 1,
    params: new TpmWriter().sized(data).toBuffer(),
  })
}

export interface CreatedPrimary {
  handle: number
  publicArea: Buffer
  public: TpmtPublic
}

export async function createPrimary(
  t: TpmTransport,
  hierarchy: number,
  template: Buffer,
): Promise<CreatedPrimary> {
  const params = new TpmWriter()
    .sized(new TpmWriter().sized(Buffer.alloc(0)).sized(Buffer.alloc(0)).toBuffer()) // inSensitive: no auth, no data
    .sized(template)
    .sized(Buffer.alloc(0)) // outsideInfo
    .u32(0) // creationPCR: none
    .toBuffer()
  const { handles, params: r } = await runCommand(t, {
    name: 'CreatePrimary',
    handles: [hierarchy],
    authorized: 1,
    params,
    responseHandles: 1,
  })
  const publicArea = Buffer.from(r.sized('outPublic'))
  const handle = handles[0]
  if (handle === undefined) throw new TpmError('TPM2_CreatePrimary returned no handle')
  return { handle, publicArea, public: readPublic(new TpmReader(publicArea, 'TPMT_PUBLIC')) }
}

export interface QuoteResult {
  /** Raw TPMS_ATTEST bytes: the signed message. */
  quoted: Buffer
  /** Raw TPMT_SIGNATURE bytes. */
  signature: Buffer
  parsedSignature: TpmtSignature
}

export async function quote(
  t: TpmTransport,
  keyHandle: number,
  qualifyingData: Buffer,
  pcrs: readonly number[],
): Promise<QuoteResult> {
  const w = new TpmWriter().sized(qualifyingData).u16(TPM_ALG.NULL) // the key's own scheme
  marshalPcrSelection(w, [{ hashAlg: TPM_ALG.SHA256, pcrs: [...pcrs] }])
  const { params } = await runCommand(t, {
    name: 'Quote',
    handles: [keyHandle],
    authorized: 1,
    params: w.toBuffer(),
  })
  const quoted = Buffer.from(params.sized('quoted'))
  const start = params.position
  const parsedSignature = readSignature(params)
  return { quoted, signature: Buffer.from(params.since(start)), parsedSignature }
}

export async function flushContext(t: TpmTransport, handle: number): Promise<void> {
  await runCommand(t, { name: 'FlushContext', params: new TpmWriter().u32(handle).toBuffer() })
}

export async function readPublicArea(t: TpmTransport, handle: number): Promise<Buffer> {
  const { params } = await runCommand(t, { name: 'ReadPublic', handles: [handle] })
  return Buffer.from(params.sized('outPublic'))
}
