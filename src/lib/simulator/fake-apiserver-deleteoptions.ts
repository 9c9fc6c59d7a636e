/**
 * The DeleteOptions body of a DELETE, for the FakeApiServer TEST DOUBLE: JSON from dynamic clients,
 * protobuf from client-go's typed clients (helm purging its release Secrets on uninstall, which
 * `--atomic` / `--rollback-on-failure` run). Only what the fake acts on is read.
 */
import protobuf from 'protobufjs'

export interface DeleteOptions {
  propagationPolicy?: string
  dryRun?: string[]
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]) // "k8s\0"

/** A protobuf DeleteOptions, or undefined if the body is not one (then the usual decoder decides). */
export function protobufDeleteOptions(body: Buffer): DeleteOptions | undefined {
  if (!body.subarray(0, 4).equals(MAGIC)) return undefined
  // runtime.Unknown: 1 typeMeta {1 apiVersion, 2 kind}, 2 raw
  const envelope = fields(body.subarray(4))
  const typeMeta = envelope.get(1)?.[0]
  const kind = typeMeta ? fields(typeMeta).get(2)?.[0]?.toString() : undefined
  if (kind !== 'DeleteOptions') return undefined
  // metav1.DeleteOptions: 4 propagationPolicy, 5 dryRun (repeated)
  const opts = fields(envelope.get(2)?.[0] ?? Buffer.alloc(0))
  return {
    propagationPolicy: opts.get(4)?.[0]?.toString(),
    dryRun: opts.get(5)?.map((b) => b.toString()),
  }
}

/** The length-delimited fields of a message by number (other wire types skipped). */
function fields(buf: Uint8Array): Map<number, Buffer[]> {
  const out = new Map<number, Buffer[]>()
  const reader = protobuf.Reader.create(buf)
  while (reader.pos < reader.len) {
    const tag = reader.uint32()
    const wireType = tag & 7
    if (wireType !== 2) {
      reader.skipType(wireType)
      continue
    }
    const field = tag >>> 3
    out.set(field, [...(out.get(field) ?? []), Buffer.from(reader.bytes())])
  }
  return out
}
