/**
 * Constellation's REST form of GetAttestation: `GET /?nonce=<base64url>` answers
 * `{"data":"<standard base64 of the document>"}` (Go's encoding of its `attestation{Data []byte}`).
 * Constellation serves it on a port of its own (NodePort 30080); ours shares the verification port,
 * told apart by the first byte. Exactly one GET per connection, its head at most 4 KiB and read
 * within the timeout; the answer closes the connection. So small a request needs no HTTP server.
 */
import type { Socket } from 'node:net'
import { peerAddress } from '../grpc/index.js'
import { AttestationRefusal, type AttestationDesk } from './get-attestation-server.js'

/** A GET with a 64-byte nonce fits many times over; anything longer is no genuine request. */
const MAX_HEAD_BYTES = 4096
const END_OF_HEAD = '\r\n\r\n'

const HTTP_STATUS = {
  invalid: [400, 'Bad Request'],
  busy: [429, 'Too Many Requests'],
  failed: [500, 'Internal Server Error'],
} as const

/** Reads one request head from `socket` (starting with `first`), answers it and closes. */
export function serveHttpGet(socket: Socket, first: Buffer, desk: AttestationDesk, timeoutMs: number): void {
  let head = first
  const timer = setTimeout(() => socket.destroy(), timeoutMs).unref()
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk])
    check()
  }
  const check = () => {
    const end = head.indexOf(END_OF_HEAD)
    if (end < 0 && head.length <= MAX_HEAD_BYTES) return
    socket.off('data', onData)
    clearTimeout(timer)
    if (end < 0 || end > MAX_HEAD_BYTES)
      return reply(socket, 431, 'Request Header Fields Too Large', 'request head over 4 KiB')
    const peer = peerAddress(`${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`)
    void answer(desk, peer, head.subarray(0, end).toString('latin1')).then(([status, reason, body, type]) =>
      reply(socket, status, reason, body, type),
    )
  }
  socket.on('data', onData)
  socket.resume()
  check()
}

type Answer = [status: number, reason: string, body: string, type?: string]

async function answer(desk: AttestationDesk, peer: string, head: string): Promise<Answer> {
  const [method, target] = (head.split('\r\n', 1)[0] ?? '').split(' ')
  if (method !== 'GET' || !target?.startsWith('/'))
    return [405, 'Method Not Allowed', 'only GET /?nonce=<base64url> is served']
  const nonces = new URL(target, 'http://node').searchParams.getAll('nonce')
  const [text] = nonces
  if (nonces.length !== 1 || !text) return [400, 'Bad Request', 'nonce parameter is required exactly once']
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(text))
    return [400, 'Bad Request', 'invalid base64url encoding for nonce']
  try {
    const document = await desk.issue(peer, Buffer.from(text, 'base64url'))
    return [200, 'OK', JSON.stringify({ data: document.toString('base64') }), 'application/json']
  } catch (err: unknown) {
    const reason = err instanceof AttestationRefusal ? err.reason : 'failed'
    const [status, phrase] = HTTP_STATUS[reason]
    return [status, phrase, err instanceof Error ? err.message : String(err)]
  }
}

function reply(
  socket: Socket,
  status: number,
  reason: string,
  body: string,
  type = 'text/plain; charset=utf-8',
): void {
  const payload = Buffer.from(`${body}\n`)
  const retry = status === 429 ? 'Retry-After: 1\r\n' : ''
  socket.end(
    Buffer.concat([
      Buffer.from(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${type}\r\nContent-Length: ${payload.length}\r\n${retry}Connection: close\r\n\r\n`,
      ),
      payload,
    ]),
  )
}
