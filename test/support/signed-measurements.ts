/**
 * Signed-measurements fixtures: keys made by openssl (the independent tool), Constellation-shaped
 * measurements JSON, openssl's signatures, and a loopback HTTP server that can serve, stall or flood.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import path from 'node:path'

export const hex = (byte: number) => byte.toString(16).padStart(2, '0').repeat(32)

/** Constellation's single-variant shape; `pcrs` maps index → [expected, warnOnly]. */
export function measurementsJson(
  variant: string,
  pcrs: Readonly<Record<number, readonly [string, boolean]>>,
  image = 'v2.99.0',
): string {
  const measurements = Object.fromEntries(
    Object.entries(pcrs).map(([i, [expected, warnOnly]]) => [i, { expected, warnOnly }]),
  )
  return `${JSON.stringify({ csp: 'QEMU', attestationVariant: variant, image, measurements }, null, 2)}\n`
}

export interface KeyPair {
  /** PEM private key, mode 0600 (SEC1 as `openssl ecparam -genkey` writes it). */
  key: string
  pub: string
}

/** A key pair from openssl in `dir`; `curve` other than prime256v1 for the refusal cases. */
export function opensslKeyPair(dir: string, name: string, curve = 'prime256v1'): KeyPair {
  const key = path.join(dir, `${name}.key`)
  const pub = path.join(dir, `${name}.pub`)
  execFileSync('openssl', ['ecparam', '-name', curve, '-genkey', '-noout', '-out', key])
  chmodSync(key, 0o600)
  execFileSync('openssl', ['ec', '-in', key, '-pubout', '-out', pub], { stdio: 'pipe' })
  return { key, pub }
}

/** `openssl dgst -sha256 -sign`, base64 as cosign writes it. */
export function opensslSign(file: string, key: string): string {
  return execFileSync('openssl', ['dgst', '-sha256', '-sign', key, file]).toString('base64')
}

/** `openssl dgst -sha256 -verify` of a base64 signature; true when openssl says "Verified OK". */
export function opensslVerifies(file: string, signatureB64: string, pub: string, dir: string): boolean {
  const der = path.join(dir, 'sig.der')
  writeFileSync(der, Buffer.from(signatureB64.trim(), 'base64'))
  try {
    return execFileSync('openssl', ['dgst', '-sha256', '-verify', pub, '-signature', der, file], {
      stdio: 'pipe',
    })
      .toString()
      .includes('Verified OK')
  } catch {
    return false
  }
}

export const readText = (file: string) => readFileSync(file, 'utf8')

export type Route = string | Buffer | ((res: ServerResponse) => void)

/** A loopback server on a random port; unknown paths answer 404. `close` ends stalled sockets too. */
export async function serveRoutes(
  routes: Record<string, Route>,
): Promise<{ base: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => {
    const route = routes[req.url ?? '']
    if (route === undefined) return void res.writeHead(404).end('not found')
    if (typeof route === 'function') return route(res)
    res.writeHead(200).end(route)
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.once('close', () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
