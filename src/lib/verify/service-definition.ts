/**
 * The verification service's one RPC. The attestation itself is the aTLS handshake; the call only
 * completes the connection and names the variant, so it carries no secret either way.
 */
import type { ServiceDefinition } from '@grpc/grpc-js'

export interface DescribeResponse {
  variant: string
}

const MAX_MESSAGE_BYTES = 4096

function parseDescribe(buf: Buffer): DescribeResponse {
  if (buf.length > MAX_MESSAGE_BYTES) throw new Error('verify.API/Describe response too large')
  const raw: unknown = JSON.parse(buf.toString('utf8'))
  if (typeof raw !== 'object' || raw === null || typeof (raw as { variant?: unknown }).variant !== 'string')
    throw new Error('verify.API/Describe response has no variant')
  return { variant: (raw as { variant: string }).variant }
}

export const DESCRIBE_PATH = '/verify.API/Describe'

export const VerifyService: ServiceDefinition = {
  describe: {
    path: DESCRIBE_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: () => Buffer.alloc(0),
    requestDeserialize: () => ({}),
    responseSerialize: (r: DescribeResponse) => Buffer.from(JSON.stringify(r)),
    responseDeserialize: parseDescribe,
  },
}
