/** Unary methods whose messages are raw bytes (the aTLS side channels: challenge, activation), and one call of one. */
import type * as grpc from '@grpc/grpc-js'

const raw = (b: Buffer) => b

export function rawUnaryMethod(path: string): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  }
}

/** Calls `path` on `client` with `request`; resolves with the answer, rejects with the gRPC error. */
export function callRaw(
  client: grpc.Client,
  path: string,
  request: Buffer,
  deadlineMs: number,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) =>
    client.makeUnaryRequest(
      path,
      raw,
      raw,
      request,
      { deadline: Date.now() + deadlineMs },
      (err: grpc.ServiceError | null, res?: Buffer) =>
        err || !res ? reject(err ?? new Error('no answer')) : resolve(res),
    ),
  )
}
