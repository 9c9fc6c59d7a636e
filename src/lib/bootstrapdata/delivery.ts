/**
 * The last steps of a run: what each machine's file holds (its document, or the stub that fetches
 * it from the object store), then the commit: local files all or nothing, uploads, registration,
 * and undoing this run's writes when a network step fails.
 */
import { createHash } from 'node:crypto'
import path from 'node:path'
import { CliError, exitCodeOf, hintOf, messageOf, UsageError } from '../errors/index.js'
import { renderBoothookStub } from './boothook.js'
import type { MachineJob } from './machine-job.js'
import type { Assignment } from './orchestrate.js'
import { objectKey, renderIgnitionStub, type ObjectStore, type S3Location } from './offload.js'
import { writeAllOrNothing, type StagedFile } from './staged-writes.js'
import type { OutputFormat } from './types.js'

export interface Upload {
  location: { bucket: string; key: string }
  document: string
  contentType: string
}

export interface Store {
  location: S3Location
  store: ObjectStore
}

/**
 * How an offloaded machine fetches its document, and the object to delete once it has: CAPA
 * deletes it when the Machine has a nodeRef; a bucket lifecycle rule (expire after 1 day) is the
 * platform's fallback for everything else.
 */
export interface MachineResult {
  machine: string
  role: Assignment['role']
  format: OutputFormat
  file: string
  /** Raw size of the full document; what a provider's user-data limit is measured against. */
  bytes: number
  offload?: OffloadResult
}

export interface OffloadResult {
  object: string
  stubBytes: number
  /** instance-role: the stub names s3://bucket/key; presigned-url: the stub holds a bearer URL. */
  access: 'instance-role' | 'presigned-url'
  /** Presigned URLs only: when the URL stops working. */
  urlExpires?: string
  /** Delete this object once the node has read it (a cloud-config node may already have). */
  deleteAfterRead: string
}

/** `presignSeconds` set: the explicit --presigned-url mode, else instance-role access. */
export interface Access {
  presignSeconds?: number
  now: Date
}

/** What a machine's result reports, and what is written for it: the document, or its offload stub. */
export async function deliver(
  job: MachineJob,
  store: Store | undefined,
  access: Access,
): Promise<{ machine: MachineResult; content: string; upload?: Upload }> {
  const machine: MachineResult = {
    machine: job.machine.metadata.name,
    role: job.role,
    format: job.format,
    file: job.file,
    bytes: Buffer.byteLength(job.document),
  }
  if (!store) return { machine, content: job.document }
  const { stub, upload } = await offload(job, store, access.presignSeconds)
  const object = `s3://${upload.location.bucket}/${upload.location.key}`
  machine.offload = {
    object,
    stubBytes: Buffer.byteLength(stub),
    access: access.presignSeconds === undefined ? 'instance-role' : 'presigned-url',
    ...(access.presignSeconds === undefined
      ? {}
      : { urlExpires: new Date(access.now.getTime() + access.presignSeconds * 1000).toISOString() }),
    deleteAfterRead: object,
  }
  return { machine, content: stub, upload }
}

/**
 * Every check has passed: the local files are written (all or nothing), then the network steps
 * run; when one of those fails, the files and uploads of this run are removed again.
 */
export async function commit(
  staged: StagedFile[],
  store: ObjectStore | undefined,
  uploads: Upload[],
  register: (() => Promise<void>) | undefined,
): Promise<void> {
  const local = await writeAllOrNothing(staged)
  const uploaded: Upload[] = []
  try {
    for (const u of uploads) {
      await store?.put(u.location, u.document, u.contentType)
      uploaded.push(u)
    }
    await register?.()
  } catch (err) {
    await local.undo()
    const left = await removeUploads(store, uploaded)
    const undone = `removed the files${uploaded.length > 0 ? ' and uploads' : ''} this run had written`
    const cleanup = left.length > 0 ? `${undone} except ${left.join(', ')}: delete them` : undone
    throw new CliError(messageOf(err), {
      exitCode: exitCodeOf(err),
      hint: [hintOf(err), cleanup].filter(Boolean).join('; '),
      cause: err,
    })
  }
}

/** The stub that makes the machine fetch the full document; the upload itself comes later. */
async function offload(
  job: MachineJob,
  store: Store,
  presignSeconds: number | undefined,
): Promise<{ stub: string; upload: Upload }> {
  const location = {
    bucket: store.location.bucket,
    key: objectKey(store.location, path.basename(job.file)),
  }
  const ignition = job.format.endsWith('ignition')
  const upload = {
    location,
    document: job.document,
    contentType: ignition ? 'application/json' : 'text/cloud-config',
  }
  if (presignSeconds !== undefined) {
    const url = await store.store.presignGet(location, presignSeconds)
    // cloud-config: cloud-init's #include fetches the URL; nothing checks a hash there.
    return { stub: ignition ? renderIgnitionStub(url, job.document) : `#include\n${url}\n`, upload }
  }
  const { endpoint, region } = store.store
  if (ignition && endpoint !== undefined) {
    throw new UsageError(
      `--s3-endpoint ${endpoint} with Ignition output needs --presigned-url: Ignition fetches s3:// URLs from AWS S3 only`,
      'use the AWS S3 endpoint (no --s3-endpoint), or accept a short-lived --presigned-url',
    )
  }
  const s3Url = `s3://${location.bucket}/${location.key}`
  const stub = ignition
    ? renderIgnitionStub(s3Url, job.document)
    : renderBoothookStub({ ...location, sha256: sha256Hex(job.document), region, endpoint })
  return { stub, upload }
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** Best effort; returns the objects that could not be removed. */
async function removeUploads(store: ObjectStore | undefined, uploads: Upload[]): Promise<string[]> {
  const left: string[] = []
  for (const u of uploads) {
    await store?.remove(u.location).catch(() => left.push(`s3://${u.location.bucket}/${u.location.key}`))
  }
  return left
}
