/**
 * The last steps of a run: what each machine's file holds (its document, or the stub that fetches
 * it from the object store), then the commit: local files all or nothing, uploads, registration,
 * and undoing this run's writes when a network step fails.
 */
import path from 'node:path'
import { CliError, exitCodeOf, hintOf, messageOf } from '../errors/index.js'
import type { MachineResult } from './generate.js'
import type { MachineJob } from './machine-job.js'
import { objectKey, renderStub, type ObjectStore, type S3Location } from './offload.js'
import { writeAllOrNothing, type StagedFile } from './staged-writes.js'

export interface Upload {
  location: { bucket: string; key: string }
  document: string
  contentType: string
}

export interface Store {
  location: S3Location
  store: ObjectStore
}

/** What a machine's result reports, and what is written for it: the document, or its offload stub. */
export async function deliver(
  job: MachineJob,
  store: Store | undefined,
  presignSeconds: number,
): Promise<{ machine: MachineResult; content: string; upload?: Upload }> {
  const machine: MachineResult = {
    machine: job.machine.metadata.name,
    role: job.role,
    format: job.format,
    file: job.file,
    bytes: Buffer.byteLength(job.document),
  }
  if (!store) return { machine, content: job.document }
  const { stub, upload } = await offload(job, store, presignSeconds)
  machine.offload = {
    object: `s3://${upload.location.bucket}/${upload.location.key}`,
    stubBytes: Buffer.byteLength(stub),
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

/** The stub that fetches the full document over a presigned URL; the upload itself comes later. */
async function offload(
  job: MachineJob,
  store: Store,
  presignSeconds: number,
): Promise<{ stub: string; upload: Upload }> {
  const location = {
    bucket: store.location.bucket,
    key: objectKey(store.location, path.basename(job.file)),
  }
  const ignition = job.format.endsWith('ignition')
  const url = await store.store.presignGet(location, presignSeconds)
  return {
    stub: renderStub(ignition ? 'ignition' : 'cloud-config', url, job.document),
    upload: {
      location,
      document: job.document,
      contentType: ignition ? 'application/json' : 'text/cloud-config',
    },
  }
}

/** Best effort; returns the objects that could not be removed. */
async function removeUploads(store: ObjectStore | undefined, uploads: Upload[]): Promise<string[]> {
  const left: string[] = []
  for (const u of uploads) {
    await store?.remove(u.location).catch(() => left.push(`s3://${u.location.bucket}/${u.location.key}`))
  }
  return left
}
