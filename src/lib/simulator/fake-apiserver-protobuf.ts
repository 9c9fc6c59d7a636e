/**
 * Request bodies in Kubernetes' protobuf encoding, for the FakeApiServer TEST DOUBLE: helm (3 and 4)
 * stores releases as Secrets and creates namespaces through client-go's typed clients, which send
 * protobuf, and kubectl's typed commands do the same. Responses stay JSON: clients decode by the
 * response's Content-Type. Only the kinds in simulator/kube-protobuf.proto (shipped with the
 * package) are understood.
 */
import protobuf from 'protobufjs'
import { packageFile } from '../paths.js'

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]) // "k8s\0"
const KINDS = ['Secret', 'ConfigMap', 'Namespace', 'SelfSubjectReview'] as const

let root: protobuf.Root | undefined
const types = () => (root ??= protobuf.loadSync(packageFile('simulator', 'kube-protobuf.proto')))

export class UnsupportedProtobufError extends Error {}

/** The object a protobuf body carries, as the JSON API would have it. */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> {
  if (!body.subarray(0, 4).equals(MAGIC))
    throw new UnsupportedProtobufError('protobuf body without the k8s magic')
  const unknown = types().lookupType('fakekube.Unknown').decode(body.subarray(4)) as unknown as {
    typeMeta?: { apiVersion?: string; kind?: string }
    raw?: Uint8Array
  }
  const kind = unknown.typeMeta?.kind ?? ''
  if (!(KINDS as readonly string[]).includes(kind))
    throw new UnsupportedProtobufError(
      `the fake decodes protobuf for ${KINDS.join(', ')} only, not ${JSON.stringify(kind)}`,
    )
  const type = types().lookupType(`fakekube.${kind}`)
  const obj = type.toObject(type.decode(unknown.raw ?? new Uint8Array()), {
    bytes: String, // base64, as JSON carries bytes
    longs: Number,
    defaults: false,
  }) as Record<string, unknown> & { metadata?: { creationTimestamp?: unknown } }
  // a Time is {seconds, nanos} on the wire and RFC 3339 in JSON
  const created = obj.metadata?.creationTimestamp as { seconds?: number } | undefined
  if (obj.metadata && created)
    obj.metadata.creationTimestamp = new Date((created.seconds ?? 0) * 1000)
      .toISOString()
      .replace('.000Z', 'Z')
  return { apiVersion: unknown.typeMeta?.apiVersion ?? 'v1', kind, ...obj }
}
