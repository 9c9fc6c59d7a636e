/**
 * NV indices as whole values: read one of any size, or put bytes at one as a firmware provisions it
 * (Azure's paravisor keeps its HCL report at 0x01400001; a stand-in TPM gets one the same way).
 */
import { CliError } from '../errors/index.js'
import { TpmWriter } from './buffer.js'
import { runCommand } from './commands.js'
import {
  NV_INDEX_FIRST,
  NV_INDEX_LAST,
  TPM_ALG,
  TPM_PT_NV_INDEX_MAX,
  TPM_RC,
  TPM_RH,
  TPMA_NV,
} from './constants.js'
import { TpmError } from './errors.js'
import {
  getTpmProperty,
  isUndefinedIndex,
  nvChunkBytes,
  nvReadAll,
  nvReadPublic,
  type NvPublic,
} from './nv.js'
import type { TpmTransport } from './transport.js'

const hex = (index: number) => `0x${index.toString(16).padStart(8, '0')}`

/** The TPM has no such NV index (or one that was never written): whoever provisions the TPM did not put it there. */
export class NvIndexMissingError extends CliError {
  constructor(
    readonly index: number,
    why: 'undefined' | 'unwritten',
  ) {
    super(`the TPM has ${why === 'undefined' ? 'no' : 'a never-written'} NV index ${hex(index)}`, {
      hint: 'the firmware (or a stand-in: writeNvIndex) provisions it; check that this is the TPM of the machine meant',
    })
    this.name = 'NvIndexMissingError'
  }
}

/** The whole contents of an NV index, read in chunks (TPM2_NV_ReadPublic, TPM2_NV_Read). */
export async function readNvIndex(t: TpmTransport, index: number): Promise<Buffer> {
  checkIndex(index)
  return nvReadAll(t, index).catch((err: unknown) => {
    if (err instanceof TpmError && err.responseCode !== undefined) {
      if (isUndefinedIndex(err.responseCode)) throw new NvIndexMissingError(index, 'undefined')
      if ((err.responseCode & 0xfff) === TPM_RC.NV_UNINITIALIZED)
        throw new NvIndexMissingError(index, 'unwritten')
    }
    throw new TpmError(`reading NV index ${hex(index)}`, undefined, { cause: err })
  })
}

/**
 * Readable and writable with the owner's auth or the index's own (empty) one, and exempt from
 * dictionary-attack lockout: a reader that loses power mid-read must not count as an attack.
 */
const INDEX_ATTRIBUTES =
  TPMA_NV.OWNERWRITE | TPMA_NV.AUTHWRITE | TPMA_NV.OWNERREAD | TPMA_NV.AUTHREAD | TPMA_NV.NO_DA

/**
 * Puts `data` at `index` with the owner's (empty) authorization: defines the index when missing,
 * redefines it when its size differs, then writes it in chunks the TPM accepts.
 */
export async function writeNvIndex(t: TpmTransport, index: number, data: Buffer): Promise<void> {
  checkIndex(index)
  if (data.length === 0) throw new RangeError('an NV index holds at least one byte')
  const max = await getTpmProperty(t, TPM_PT_NV_INDEX_MAX)
  if (max !== undefined && data.length > max)
    throw new CliError(
      `${data.length} bytes do not fit NV index ${hex(index)}: this TPM holds at most ${max} bytes in one index (TPM_PT_NV_INDEX_MAX)`,
      { hint: 'store less, or use a TPM that allows larger indices' },
    )
  const existing = await publicIfDefined(t, index)
  if (existing && existing.dataSize !== data.length) await undefineSpace(t, index)
  if (!existing || existing.dataSize !== data.length) await defineSpace(t, index, data.length)
  const chunk = await nvChunkBytes(t)
  for (let offset = 0; offset < data.length; offset += chunk) {
    const part = data.subarray(offset, offset + chunk)
    await runCommand(t, {
      name: 'NV_Write',
      handles: [TPM_RH.OWNER, index],
      authorized: 1,
      params: new TpmWriter().sized(part).u16(offset).toBuffer(),
    }).catch((cause: unknown) => {
      throw new TpmError(`writing NV index ${hex(index)} at offset ${offset}`, undefined, { cause })
    })
  }
}

function checkIndex(index: number): void {
  if (!Number.isInteger(index) || index < NV_INDEX_FIRST || index > NV_INDEX_LAST)
    throw new RangeError(
      `${index} is not an NV index handle (${hex(NV_INDEX_FIRST)} to ${hex(NV_INDEX_LAST)})`,
    )
}

async function publicIfDefined(t: TpmTransport, index: number): Promise<NvPublic | undefined> {
  try {
    return await nvReadPublic(t, index)
  } catch (err) {
    if (err instanceof TpmError && err.responseCode !== undefined && isUndefinedIndex(err.responseCode))
      return undefined
    throw new TpmError(`reading the public area of NV index ${hex(index)}`, undefined, { cause: err })
  }
}

async function defineSpace(t: TpmTransport, index: number, size: number): Promise<void> {
  const nvPublic = new TpmWriter()
    .u32(index)
    .u16(TPM_ALG.SHA256)
    .u32(INDEX_ATTRIBUTES)
    .sized(Buffer.alloc(0)) // authPolicy: none
    .u16(size)
    .toBuffer()
  await runCommand(t, {
    name: 'NV_DefineSpace',
    handles: [TPM_RH.OWNER],
    authorized: 1,
    params: new TpmWriter().sized(Buffer.alloc(0)).sized(nvPublic).toBuffer(), // auth: empty
  }).catch((cause: unknown) => {
    throw new TpmError(`defining NV index ${hex(index)} of ${size} bytes`, undefined, { cause })
  })
}

async function undefineSpace(t: TpmTransport, index: number): Promise<void> {
  await runCommand(t, { name: 'NV_UndefineSpace', handles: [TPM_RH.OWNER, index], authorized: 1 }).catch(
    (cause: unknown) => {
      throw new TpmError(`undefining NV index ${hex(index)} to redefine it with a new size`, undefined, {
        cause,
      })
    },
  )
}
