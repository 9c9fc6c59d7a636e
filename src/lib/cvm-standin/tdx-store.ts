/**
 * TEST DOUBLE persistence: a TDX stand-in saved to a directory (private keys PEM, 0600, never
 * overwritten) so the local cluster's nodes and verifiers share one stand-in Intel.
 */
import { createPrivateKey } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { standInFrom, type TdxStandIn, type TdxStandInCertificates, type TdxStandInKeys } from './tdx.js'
import type { StandInPlatform } from './tdx-collateral.js'

const KEY_FILES: Record<keyof TdxStandInKeys, string> = {
  root: 'root.key.pem',
  pckCa: 'pck-ca.key.pem',
  pck: 'pck.key.pem',
  attestation: 'attestation.key.pem',
  tcbSigning: 'tcb-signing.key.pem',
}
const CERT_FILES: Record<keyof TdxStandInCertificates, string> = {
  root: 'root.crt.pem',
  pckCa: 'pck-ca.crt.pem',
  pck: 'pck.crt.pem',
  tcbSigning: 'tcb-signing.crt.pem',
}
const PLATFORM_FILE = 'platform.json'

export async function saveTdxStandIn(s: TdxStandIn, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const write = (name: string, text: string, mode: number) =>
    writeFile(path.join(dir, name), text, { mode, flag: 'wx' })
  for (const [k, name] of Object.entries(KEY_FILES) as [keyof TdxStandInKeys, string][])
    await write(name, s.keys[k].export({ type: 'pkcs8', format: 'pem' }).toString(), 0o600)
  for (const [k, name] of Object.entries(CERT_FILES) as [keyof TdxStandInCertificates, string][])
    await write(name, s.certificates[k], 0o644)
  const p = s.platform
  const json = { ...p, teeTcbSvn: p.teeTcbSvn.toString('hex'), qeMrSigner: p.qeMrSigner.toString('hex') }
  await write(PLATFORM_FILE, `${JSON.stringify(json, null, 2)}\n`, 0o644)
}

export async function loadTdxStandIn(dir: string): Promise<TdxStandIn> {
  const read = (name: string) => readFile(path.join(dir, name), 'utf8')
  const keys = {} as TdxStandInKeys
  for (const [k, name] of Object.entries(KEY_FILES) as [keyof TdxStandInKeys, string][])
    keys[k] = createPrivateKey(await read(name))
  const certificates = {} as TdxStandInCertificates
  for (const [k, name] of Object.entries(CERT_FILES) as [keyof TdxStandInCertificates, string][])
    certificates[k] = await read(name)
  return standInFrom(
    keys,
    certificates,
    parsePlatform(await read(PLATFORM_FILE), path.join(dir, PLATFORM_FILE)),
  )
}

function parsePlatform(text: string, file: string): StandInPlatform {
  const bad = (why: string) => new Error(`TDX stand-in ${file}: ${why}`)
  const raw = JSON.parse(text) as Record<string, unknown>
  const str = (k: string) => {
    const v = raw[k]
    if (typeof v !== 'string') throw bad(`${k} must be a string`)
    return v
  }
  const num = (k: string) => {
    const v = raw[k]
    if (typeof v !== 'number') throw bad(`${k} must be a number`)
    return v
  }
  const comps = raw.tcbComponents
  if (!Array.isArray(comps) || comps.length !== 16 || !comps.every((c) => typeof c === 'number'))
    throw bad('tcbComponents must be 16 numbers')
  return {
    fmspc: str('fmspc'),
    pceId: str('pceId'),
    tcbComponents: comps,
    pceSvn: num('pceSvn'),
    teeTcbSvn: Buffer.from(str('teeTcbSvn'), 'hex'),
    qeSvn: num('qeSvn'),
    qeMrSigner: Buffer.from(str('qeMrSigner'), 'hex'),
  }
}
