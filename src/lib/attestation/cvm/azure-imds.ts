/**
 * Azure's instance metadata service, the two calls Azure's CVM variants make (as Constellation's
 * issuers do): the VCEK and its chain from the THIM cache (SEV-SNP), and a quote for a TD report
 * (TDX). Plain HTTP to the link-local IMDS address; bounded in size and time like every download.
 */
import { request } from 'node:http'
import { AttestationError } from '../errors.js'

export const AZURE_IMDS_URL = 'http://169.254.169.254'
const THIM_PATH = '/metadata/THIM/amd/certification'
const TDQUOTE_PATH = '/acc/tdquote'
const MAX_ANSWER_BYTES = 64 * 1024
const TIMEOUT_MS = 10_000

export interface AzureImds {
  vcek(): Promise<{ vcek: Buffer; chain: Buffer }>
  tdQuote(tdReport: Buffer): Promise<Buffer>
}

export function azureImds(baseUrl = AZURE_IMDS_URL, timeoutMs = TIMEOUT_MS): AzureImds {
  const call = (path: string, body?: unknown) => jsonCall(new URL(path, baseUrl), body, timeoutMs)
  return {
    async vcek() {
      const answer = await call(THIM_PATH)
      return {
        vcek: Buffer.from(stringField(answer, 'vcekCert', THIM_PATH)),
        chain: Buffer.from(stringField(answer, 'certificateChain', THIM_PATH)),
      }
    },
    async tdQuote(tdReport) {
      const answer = await call(TDQUOTE_PATH, { report: tdReport.toString('base64url') })
      return Buffer.from(stringField(answer, 'quote', TDQUOTE_PATH), 'base64url')
    },
  }
}

function stringField(answer: unknown, field: string, path: string): string {
  const value = (answer as Record<string, unknown> | null)?.[field]
  if (typeof value !== 'string' || value === '')
    throw new AttestationError(`Azure IMDS ${path} answered without "${field}"`)
  return value
}

function jsonCall(url: URL, body: unknown, timeoutMs: number): Promise<unknown> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new AttestationError(`Azure IMDS ${url.pathname}: ${why}`))
    const req = request(
      url,
      {
        method: payload ? 'POST' : 'GET',
        headers: { Metadata: 'true', ...(payload && { 'Content-Type': 'application/json' }) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          size += c.length
          if (size > MAX_ANSWER_BYTES) {
            req.destroy()
            fail(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`)
          } else chunks.push(c)
        })
        res.on('end', () => {
          if (res.statusCode !== 200) return fail(`HTTP ${res.statusCode ?? '?'}`)
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown)
          } catch {
            fail('the answer is not JSON')
          }
        })
        res.on('error', (err) => fail(err.message))
      },
    )
    req.on('timeout', () => {
      req.destroy()
      fail(`no answer within ${timeoutMs} ms`)
    })
    req.on('error', (err) => fail(`${err.message} (is this an Azure VM?)`))
    req.end(payload)
  })
}
