/**
 * The cluster's CA set in kubeadm's file layout (capi.md §5): generated when absent, used as given
 * when present (after checking that each certificate parses and matches its key), never overwritten.
 */
import { X509Certificate, createHash, createPrivateKey, createPublicKey } from 'node:crypto'
import path from 'node:path'
import { CliError } from '../errors/index.js'
import { lstatIfPresent, readRegularFile } from '../system/index.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateRsaKeyPair,
  keyUsage,
  randomSerialNumber,
  signCertificate,
  subjectKeyIdentifier,
  toPem,
} from '../x509/index.js'
import type { StagedFile } from './staged-writes.js'
import type { CertificateAuthorities, KeyPair, NodeFile } from './types.js'

const CA_VALIDITY_YEARS = 10
const CLOCK_SKEW_MS = 5 * 60_000

/** Relative file names of each pair, as kubeadm expects them under certificatesDir. */
export const CA_FILES = {
  ca: { cert: 'ca.crt', key: 'ca.key' },
  etcdCa: { cert: 'etcd/ca.crt', key: 'etcd/ca.key' },
  frontProxyCa: { cert: 'front-proxy-ca.crt', key: 'front-proxy-ca.key' },
  sa: { cert: 'sa.pub', key: 'sa.key' },
} as const
export type PairName = keyof typeof CA_FILES

export interface CaDirResult {
  authorities: CertificateAuthorities
  /** The generated pairs' files, for the caller to write once every other check has passed. */
  toWrite: StagedFile[]
}

/**
 * Loads the CA set; with `generate`, creates the missing pairs in memory (a half-present pair is
 * an error). Nothing is written here.
 */
export async function loadOrCreateAuthorities(
  caDir: string,
  opts: { generate: boolean; now: Date },
): Promise<CaDirResult> {
  const toWrite: StagedFile[] = []
  const pairs = {} as Record<PairName, KeyPair>
  const missing: PairName[] = []
  // Every present pair is checked before anything is generated, so a refusal changes nothing.
  for (const name of Object.keys(CA_FILES) as PairName[]) {
    const certFile = path.join(caDir, CA_FILES[name].cert)
    const keyFile = path.join(caDir, CA_FILES[name].key)
    const [certPem, keyPem] = await Promise.all([readOptional(certFile), readOptional(keyFile)])
    if (certPem !== undefined && keyPem !== undefined) {
      pairs[name] = checkPair(name, { certPem, keyPem }, certFile, keyFile)
    } else if (certPem !== undefined || keyPem !== undefined) {
      const [have, absent] = certPem !== undefined ? [certFile, keyFile] : [keyFile, certFile]
      throw new CliError(`${have} exists but ${absent} does not`, {
        hint: 'restore the missing file, or move both away to generate a new pair',
      })
    } else if (!opts.generate) {
      throw new CliError(`${certFile} does not exist`, {
        hint: 'join data needs the cluster CAs: pass --ca-dir with the directory the init data was generated from',
      })
    } else missing.push(name)
  }
  for (const name of missing) {
    const pair = name === 'sa' ? createServiceAccountKey() : createCertificateAuthority(opts.now)
    const keyFile = path.join(caDir, CA_FILES[name].key)
    const certFile = path.join(caDir, CA_FILES[name].cert)
    toWrite.push(
      { file: path.resolve(keyFile), content: pair.keyPem, secret: true },
      { file: path.resolve(certFile), content: pair.certPem, secret: false },
    )
    pairs[name] = pair
  }
  return { authorities: pairs, toWrite }
}

/** A self-signed RSA CA like CAPI's: CN kubernetes, 10 years, backdated 5 minutes for clock skew. */
export function createCertificateAuthority(now: Date, commonName = 'kubernetes'): KeyPair {
  const { privateKey, publicKey } = generateRsaKeyPair()
  const notAfter = new Date(now.getTime())
  notAfter.setUTCFullYear(now.getUTCFullYear() + CA_VALIDITY_YEARS)
  const name = distinguishedName([['CN', commonName]])
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
      notAfter,
      publicKey,
      extensions: [
        caBasicConstraints(),
        keyUsage(['digitalSignature', 'keyEncipherment', 'keyCertSign']),
        subjectKeyIdentifier(publicKey),
      ],
    },
    privateKey,
  )
  return { certPem: toPem(der), keyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() }
}

/** The service-account signing key: a bare RSA pair, public half as PKIX `PUBLIC KEY`. */
export function createServiceAccountKey(): KeyPair {
  const { privateKey, publicKey } = generateRsaKeyPair()
  return {
    certPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
  }
}

/** kubeadm's `--discovery-token-ca-cert-hash`: sha256 of the CA certificate's SubjectPublicKeyInfo. */
export function caCertHash(certPem: string): string {
  const spki = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' })
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`
}

/** The CA files control-plane machines need, under kubeadm's certificatesDir. */
export function certificateFiles(cas: CertificateAuthorities, certificatesDir: string): NodeFile[] {
  return (Object.keys(CA_FILES) as PairName[]).flatMap((name) => [
    {
      path: `${certificatesDir}/${CA_FILES[name].cert}`,
      content: cas[name].certPem,
      owner: 'root:root',
      permissions: '0640',
    },
    {
      path: `${certificatesDir}/${CA_FILES[name].key}`,
      content: cas[name].keyPem,
      owner: 'root:root',
      permissions: '0600',
    },
  ])
}

/**
 * Checks a pair as given (files here, Secrets in ca-secrets.ts): a CA certificate and its own
 * private key, or for `sa` a PKIX `PUBLIC KEY` and its private key. Errors name the place by the
 * labels only, never the content.
 */
export function checkPair(
  name: PairName,
  pair: KeyPair,
  certFile: string,
  keyFile: string,
  mismatchHint = 'put the matching key beside the certificate',
): KeyPair {
  let key
  try {
    key = createPrivateKey(pair.keyPem)
  } catch (cause) {
    throw new CliError(`${keyFile} is not a PEM private key`, { cause })
  }
  if (name === 'sa') {
    // createPublicKey also takes a private key or a certificate; sa.pub must be the public key alone.
    if (!PUBLIC_KEY_PEM.test(pair.certPem))
      throw new CliError(`${certFile} is not one PEM public key (a PUBLIC KEY block)`)
    let pub
    try {
      pub = createPublicKey(pair.certPem)
    } catch (cause) {
      throw new CliError(`${certFile} is not a PEM public key`, { cause })
    }
    const der = (k: typeof pub) => k.export({ type: 'spki', format: 'der' })
    if (!der(pub).equals(der(createPublicKey(key)))) throw mismatch(certFile, keyFile, mismatchHint)
    return pair
  }
  let cert
  try {
    cert = new X509Certificate(pair.certPem)
  } catch (cause) {
    throw new CliError(`${certFile} is not a PEM certificate`, { cause })
  }
  if (!cert.ca)
    throw new CliError(`${certFile} is not a CA certificate (basicConstraints CA:TRUE is missing)`)
  if (!cert.checkPrivateKey(key)) throw mismatch(certFile, keyFile, mismatchHint)
  return pair
}

/** Exactly one PEM block, of type PUBLIC KEY. */
const PUBLIC_KEY_PEM = /^\s*-----BEGIN PUBLIC KEY-----[A-Za-z0-9+/=\s]+-----END PUBLIC KEY-----\s*$/

const mismatch = (certFile: string, keyFile: string, hint: string) =>
  new CliError(`${keyFile} does not belong to ${certFile}`, { hint })

/** A PEM certificate or key is a few KiB; anything far larger is not one. */
const MAX_PEM_FILE_BYTES = 1024 * 1024

async function readOptional(file: string): Promise<string | undefined> {
  const entry = await lstatIfPresent(file).catch((cause: unknown) => {
    throw new CliError(`reading ${file}`, { cause })
  })
  if (!entry) return undefined
  const data = await readRegularFile(file, { what: 'CA file', maxBytes: MAX_PEM_FILE_BYTES })
  return data.toString('utf8')
}
