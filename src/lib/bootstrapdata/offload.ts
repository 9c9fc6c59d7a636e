/**
 * User data too big for the provider (capi.md §7.4), or that should not sit in instance metadata,
 * goes to an S3-compatible store; the machine gets a small stub that names the object as
 * s3://bucket/key and fetches it with its own instance role (capi.md §7.2 "IAM mode"), so reading
 * the user data gives no keys. A presigned HTTPS URL is only an explicit opt-in: it is a bearer
 * credential for the data until it expires. Credentials for the upload come from the AWS SDK's
 * default chain (environment, profile), never from flags.
 */
import { createHash } from 'node:crypto'
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { CliError, UsageError } from '../errors/index.js'
import { IGNITION_VERSION } from './ignition.js'

/** EC2's limit on raw user data, the smallest of the common clouds. */
export const DEFAULT_MAX_USER_DATA_BYTES = 16_384
/** Short: a presigned URL in user data lets anyone who reads that fetch the keys. */
export const DEFAULT_PRESIGN_SECONDS = 10 * 60
/** S3 SigV4's limit. */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

export interface S3Location {
  bucket: string
  prefix: string
}

/** The store seen by the offload step: put an object, hand out a time-limited GET URL. */
export interface ObjectStore {
  /** Set for a non-AWS store (--s3-endpoint); the node's fetch must go there too. */
  readonly endpoint?: string
  readonly region: string
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
  const prefix = (m[2] ?? '').replace(/\/+$/, '')
  // The key goes into a shell script and a MIME part of the stub: one printable ASCII line only.
  if (!/^[\x20-\x7e]*$/.test(prefix)) {
    throw new UsageError(`--upload: the prefix ${JSON.stringify(prefix)} may hold only printable ASCII`)
  }
  return { bucket, prefix }
}

export function objectKey(location: S3Location, fileName: string): string {
  return location.prefix ? `${location.prefix}/${fileName}` : fileName
}

/**
 * An Ignition stub that fetches the full document from `url`: s3:// (Ignition fetches it with the
 * instance role from AWS S3) or a presigned https:// URL.
 */
export function renderIgnitionStub(url: string, fullDocument: string): string {
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
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1'
  const client = new S3Client({
    endpoint: opts.endpoint,
    forcePathStyle: opts.endpoint !== undefined,
    region,
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
    endpoint: opts.endpoint,
    region,
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
