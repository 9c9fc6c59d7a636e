/** HOST:PORT text: the one parser and the one formatter, so every address is read and written alike. */
import { isIP } from 'node:net'
import { UsageError } from '../errors/index.js'

export interface HostPort {
  /** An IPv4 address, an IPv6 address (without brackets) or a DNS name. */
  host: string
  /** Undefined when the text named only the host. */
  port?: number
}

export interface ParseHostPortOptions {
  /** Refuse a HOST without a port. */
  requirePort?: boolean
  /** Accept port 0: an address to listen on, where the system picks the port. */
  allowPortZero?: boolean
  /** Read an IPv6 address without brackets (`fd00::5`) as a host alone, as people type it. */
  allowBareIpv6?: boolean
}

export const MAX_PORT = 65535

// The host part: [anything] or a run without colons and brackets; each is checked below.
const HOST_PORT = /^(?:\[([^\]]*)\]|([^:[\]]*))(?::([^:]*))?$/
const DNS_NAME = /^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$/
const DECIMAL_PORT = /^\d{1,5}$/

/** Parses HOST, HOST:PORT, [IPv6] or [IPv6]:PORT; throws an Error naming the text and what is wrong. */
export function parseHostPort(
  text: string,
  opts: ParseHostPortOptions & { requirePort: true },
): Required<HostPort>
export function parseHostPort(text: string, opts?: ParseHostPortOptions): HostPort
export function parseHostPort(text: string, opts: ParseHostPortOptions = {}): HostPort {
  const result = readHostPort(text, opts)
  if ('problem' in result) {
    const form = opts.requirePort ? 'HOST:PORT' : 'HOST or HOST:PORT'
    throw new Error(`${JSON.stringify(text)} is not ${form}: ${result.problem}`)
  }
  return result
}

export function isHostPort(text: string, opts: ParseHostPortOptions = {}): boolean {
  return !('problem' in readHostPort(text, opts))
}

/** HOST:PORT, or HOST alone without a port; an IPv6 host gets its brackets. */
export function formatHostPort(host: string, port?: number): string {
  const shown = host.includes(':') ? `[${host}]` : host
  return port === undefined ? shown : `${shown}:${port}`
}

function readHostPort(text: string, opts: ParseHostPortOptions): HostPort | { problem: string } {
  if (opts.allowBareIpv6 && isIP(text) === 6) {
    return opts.requirePort ? { problem: 'the port is missing' } : { host: text }
  }
  const m = HOST_PORT.exec(text)
  if (!m) return { problem: 'stray colons or brackets (an IPv6 address goes in brackets: [fd00::1]:9000)' }
  const [, bracketed, plain, portText] = m
  const host = bracketed ?? plain ?? ''
  if (bracketed !== undefined ? isIP(host) !== 6 : !(isIP(host) === 4 || DNS_NAME.test(host)))
    return {
      problem:
        bracketed !== undefined
          ? `${JSON.stringify(host)} in brackets is not an IPv6 address`
          : `${JSON.stringify(host)} is not an IP address or DNS name`,
    }
  if (portText === undefined) return opts.requirePort ? { problem: 'the port is missing' } : { host }
  const port = Number(portText)
  const lowest = opts.allowPortZero ? 0 : 1
  if (!DECIMAL_PORT.test(portText) || port < lowest || port > MAX_PORT)
    return { problem: `the port must be a decimal number from ${lowest} to ${MAX_PORT}` }
  return { host, port }
}

/**
 * Where an operator command dials, from a flag or a config key (`source` names it in the error):
 * HOST, HOST:PORT, [IPv6], [IPv6]:PORT or a bare IPv6 address; a usage error otherwise.
 */
export function readEndpoint(text: string, source: string, examplePort: number): HostPort {
  try {
    return parseHostPort(text, { allowBareIpv6: true })
  } catch {
    throw new UsageError(
      `${source} ${JSON.stringify(text)} is not HOST, HOST:PORT or [IPv6]:PORT`,
      `for example 10.0.0.5, 10.0.0.5:${examplePort} or [fd00::5]:${examplePort}`,
    )
  }
}
