/**
 * User data too big for the provider (capi.md §7.4), or that should not sit in instance metadata,
 * goes to an S3-compatible store; the machine gets a small stub that fetches it over a presigned
 * HTTPS URL (no instance role needed). Credentials come from the AWS SDK's default chain
 * (environment, profile), never from flags.
 */
import { createHash } from 'node:crypto'
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { CliError, UsageError } from '../errors/index.js'
import { IGNITION_VERSION } from './ignition.js'

/** EC2's limit on raw user data, the smallest of the common clouds. */
export const DEFAULT_MAX_USER_DATA_BYTES = 16_384
export const DEFAULT_PRESIGN_SECONDS = 24 * 3600
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

export interface S3Location {
  bucket: string
  prefix: string
}

/** The store seen by the offload step: put an object, hand out a time-limited GET URL. */
export interface ObjectStore {
  put(location: { bucket: string; key: string }, body: string, contentType: string): Promise<void>
  presignGet(location: { bucket: string; key: string }, expiresSeconds: number): Promise<string>
  /** Takes back an upload of a run that failed later (the full data holds CA keys). */
  remove(location: { bucket: string; key: string }): Promise<void>
}

export function parseS3Url(url: string): S3Location {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url)
  if (!m) throw new UsageError(`--upload ${JSON.stringify(url)} is not an s3://bucket/prefix URL`)
  const bucket = m[1] as string
  if (!BUCKET_NAME.test(bucket) || /^\d+\.\d+\.\d+\.\d+$/.test(bucket)) {
    throw new UsageError(
      `--upload: ${JSON.stringify(bucket)} is not a valid bucket name (3-63 of a-z 0-9 . -, not an IP)`,
    )
  }
  return { bucket, prefix: (m[2] ?? '').replace(/\/+$/, '') }
}

export function objectKey(location: S3Location, fileName: string): string {
  return location.prefix ? `${location.prefix}/${fileName}` : fileName
}

/** A stub that makes the machine fetch and use the full document at `url`. */
export function renderStub(format: 'cloud-config' | 'ignition', url: string, fullDocument: string): string {
  if (format === 'cloud-config') return `#include\n${url}\n`
  const hash = `sha512-${createHash('sha512').update(fullDocument).digest('hex')}`
  // replace: the fetched config is the whole config, verified against the hash before use.
  const stub = {
    ignition: { version: IGNITION_VERSION, config: { replace: { source: url, verification: { hash } } } },
  }
  return `${JSON.stringify(stub)}\n`
}

export interface S3StoreOptions {
  /** A custom endpoint (MinIO, Ceph, a local server); path-style addressing is used with it. */
  endpoint?: string
  region?: string
  /** Explicit credentials (tests); otherwise the SDK's default chain, never a flag. */
  credentials?: { accessKeyId: string; secretAccessKey: string }
}

export function createS3Store(opts: S3StoreOptions): ObjectStore {
  const client = new S3Client({
    endpoint: opts.endpoint,
    forcePathStyle: opts.endpoint !== undefined,
    region: opts.region ?? process.env.AWS_REGION ?? 'us-east-1',
    credentials: opts.credentials,
    // S3-compatible servers often lack the newer default checksums; send them only where S3 needs them.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  const fail = (what: string, location: { bucket: string; key: string }, cause: unknown) =>
    new CliError(
      `${what} s3://${location.bucket}/${location.key}${opts.endpoint ? ` at ${opts.endpoint}` : ''}`,
      {
        exitCode: 3,
        hint: 'check the bucket, --s3-endpoint and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY environment',
        cause,
      },
    )
  return {
    async put(location, body, contentType) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket: location.bucket,
            Key: location.key,
            Body: body,
            ContentType: contentType,
          }),
        )
      } catch (cause) {
        throw fail('uploading', location, cause)
      }
    },
    async remove(location) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: location.bucket, Key: location.key }))
      } catch (cause) {
        throw fail('removing', location, cause)
      }
    },
    async presignGet(location, expiresSeconds) {
      try {
        return await getSignedUrl(
          client,
          new GetObjectCommand({ Bucket: location.bucket, Key: location.key }),
          {
            expiresIn: expiresSeconds,
          },
        )
      } catch (cause) {
        throw fail('presigning', location, cause)
      }
    },
  }
}
