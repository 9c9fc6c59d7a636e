/** Reading whole NV indices: TPM2_NV_ReadPublic, then TPM2_NV_Read in chunks the TPM accepts. */
import { TpmReader, TpmWriter } from './buffer.js'
import { TPM_CAP_TPM_PROPERTIES, TPM_PT_NV_BUFFER_MAX, TPM_RH, TPMA_NV } from './constants.js'
import { runCommand } from './commands.js'
import { TpmError } from './errors.js'
import type { TpmTransport } from './transport.js'

/** Used when the TPM does not report TPM_PT_NV_BUFFER_MAX; every TPM 2.0 serves at least this. */
const DEFAULT_NV_CHUNK_BYTES = 512
/** A larger chunk would not fit the transport's 4096-byte response limit with headers. */
const MAX_NV_CHUNK_BYTES = 2048

export interface NvPublic {
  index: number
  nameAlg: number
  attributes: number
  dataSize: number
}

/** TPM_RC_HANDLE blaming handle 1: the NV index is not defined. */
export const isUndefinedIndex = (rc: number) => (rc & 0x0bf) === 0x08b

export async function nvReadPublic(t: TpmTransport, index: number): Promise<NvPublic> {
  const { params } = await runCommand(t, { name: 'NV_ReadPublic', handles: [index] })
  const r = new TpmReader(params.sized('nvPublic'), 'TPMS_NV_PUBLIC')
  const nvIndex = r.u32('nvIndex')
  const nameAlg = r.u16('nameAlg')
  const attributes = r.u32('attributes')
  r.sized('authPolicy', 64)
  const dataSize = r.u16('dataSize')
  r.end()
  if (nvIndex !== index) r.fail('nvIndex', `0x${nvIndex.toString(16)} is not the index asked for`)
  return { index, nameAlg, attributes, dataSize }
}

/** One TPM property value (TPM2_GetCapability), or undefined when the TPM does not report it. */
export async function getTpmProperty(t: TpmTransport, property: number): Promise<number | undefined> {
  const params = new TpmWriter().u32(TPM_CAP_TPM_PROPERTIES).u32(property).u32(1).toBuffer()
  const { params: r } = await runCommand(t, { name: 'GetCapability', params })
  r.u8('moreData')
  const capability = r.u32('capabilityData.capability')
  if (capability !== TPM_CAP_TPM_PROPERTIES) r.fail('capabilityData.capability', 'not TPM properties')
  const count = r.u32('tpmProperties.count')
  for (let i = 0; i < count; i++) {
    const p = r.u32(`tpmProperties[${i}].property`)
    const value = r.u32(`tpmProperties[${i}].value`)
    if (p === property) return value
  }
  return undefined
}

/** The most one TPM2_NV_Read or TPM2_NV_Write moves: the TPM's TPM_PT_NV_BUFFER_MAX, bounded. */
export async function nvChunkBytes(t: TpmTransport): Promise<number> {
  const reported = await getTpmProperty(t, TPM_PT_NV_BUFFER_MAX)
  return Math.min(reported ?? DEFAULT_NV_CHUNK_BYTES, MAX_NV_CHUNK_BYTES)
}

/**
 * The whole contents of an NV index, read with the index's own (empty) authorization when it
 * allows AUTHREAD, else with the owner's; chunked by the TPM's TPM_PT_NV_BUFFER_MAX.
 */
export async function nvReadAll(t: TpmTransport, index: number): Promise<Buffer> {
  const pub = await nvReadPublic(t, index)
  const authHandle =
    pub.attributes & TPMA_NV.AUTHREAD ? index : pub.attributes & TPMA_NV.OWNERREAD ? TPM_RH.OWNER : undefined
  if (authHandle === undefined)
    throw new TpmError(`NV index 0x${index.toString(16)} is readable by neither its own nor the owner's auth`)
  const chunk = await nvChunkBytes(t)
  const chunks: Buffer[] = []
  for (let offset = 0; offset < pub.dataSize; offset += chunk) {
    const size = Math.min(chunk, pub.dataSize - offset)
    const { params } = await runCommand(t, {
      name: 'NV_Read',
      handles: [authHandle, index],
      authorized: 1,
      params: new TpmWriter().u16(size).u16(offset).toBuffer(),
    })
    const data = params.sized('data')
    if (data.length !== size) params.fail('data', `${data.length} bytes for a read of ${size}`)
    chunks.push(Buffer.from(data))
  }
  return Buffer.concat(chunks)
}
