/**
 * tpm-ek in a local cluster: one local CA per cluster stands in for the TPM manufacturer. Its keys
 * live in swtpm_localca's statedir; `swtpm_setup --create-ek-cert` manufactures each node's TPM
 * state with it before that TPM first starts: EKs (RSA 2048, ECC P-384), their certificates in NV,
 * the SHA-256 PCR bank. The EK certificates are issued by the CA's issuing certificate
 * (issuercert.pem) and the TPMs carry no intermediate in NV, so that certificate is the root
 * verifiers trust. Both programs are Debian's swtpm-tools.
 */
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { CliError, messageOf } from '../errors/index.js'
import { writeFileAtomic, writeSecretFile, type Runner } from '../system/index.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP256KeyPair,
  keyUsage,
  pemOfSigned,
  randomSerialNumber,
  signCertificate,
  subjectKeyIdentifier,
} from '../x509/index.js'

/** The files of a local CA in `dir`; swtpm_localca creates the keys and certificates on first use. */
export function localCaFiles(dir: string) {
  return {
    dir,
    /** swtpm_localca's config: statedir, signing key, issuing certificate, serial counter. */
    localcaConfig: path.join(dir, 'swtpm-localca.conf'),
    /** swtpm_setup's config: which certificate tool to run, with which config. */
    setupConfig: path.join(dir, 'swtpm_setup.conf'),
    signingKey: path.join(dir, 'signkey.pem'),
    /** Issues the EK certificates: what verifiers trust as the manufacturer's root. */
    issuerCert: path.join(dir, 'issuercert.pem'),
    certSerial: path.join(dir, 'certserial'),
    /** The self-signed CA above issuerCert (swtpm_localca's own name for it). */
    rootCert: path.join(dir, 'swtpm-localca-rootca-cert.pem'),
  }
}
export type LocalCaFiles = ReturnType<typeof localCaFiles>

export const SWTPM_LOCALCA = '/usr/bin/swtpm_localca'
/** About 1 s per TPM here (two EKs, two certificates); without createLocalCa the first also makes the CA's keys. */
const MANUFACTURE_TIMEOUT_MS = 60_000

/**
 * Writes the two config files (nothing global on disk is read or touched: without --config,
 * swtpm_setup would use /etc/swtpm_setup.conf and the CA in /var/lib/swtpm-localca).
 */
export async function writeLocalCaConfig(ca: LocalCaFiles): Promise<void> {
  await mkdir(ca.dir, { recursive: true, mode: 0o700 })
  const localca = {
    statedir: ca.dir,
    signingkey: ca.signingKey,
    issuercert: ca.issuerCert,
    certserial: ca.certSerial,
  }
  await writeSecretFile(ca.localcaConfig, lines(localca), 'replace')
  const setup = {
    create_certs_tool: SWTPM_LOCALCA,
    create_certs_tool_config: ca.localcaConfig,
    active_pcr_banks: 'sha256',
  }
  await writeSecretFile(ca.setupConfig, lines(setup), 'replace')
}

/** RFC 5280 §4.1.2.5: a certificate with no well-defined expiration date, as swtpm_localca's own. */
const NO_EXPIRY = new Date('9999-12-31T23:59:59Z')
const MANUFACTURER_NAME = 'constellation mini TPM manufacturer (stand-in)'

/**
 * The CA's signing key (ECDSA P-256, 0600) and its self-signed issuing certificate, made before any
 * TPM is manufactured, so that all of a cluster's TPMs are manufactured at once. Left to
 * swtpm_localca, the first swtpm_setup makes them (two RSA 3072 keys with certtool, about 1 s
 * here) while every other TPM waits for it. swtpm_localca uses the files it finds.
 */
export async function createLocalCa(ca: LocalCaFiles, now = new Date()): Promise<void> {
  // a CA already there (a cluster's folder kept from before) is its TPMs' manufacturer still
  if (await exists(ca.signingKey)) return
  const { publicKey, privateKey } = await generateEcdsaP256KeyPair()
  const name = distinguishedName([['CN', MANUFACTURER_NAME]])
  const cert = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(now.getTime() - 60 * 60 * 1000), // an hour of clock skew between nodes
      notAfter: NO_EXPIRY,
      publicKey,
      extensions: [caBasicConstraints(), keyUsage(['keyCertSign']), subjectKeyIdentifier(publicKey)],
    },
    privateKey,
  )
  await writeSecretFile(ca.signingKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), 'exclusive')
  await writeFileAtomic(ca.issuerCert, pemOfSigned(cert), 0o644) // the root every node's config names
}

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  )

const lines = (entries: Record<string, string>) =>
  Object.entries(entries)
    .map(([k, v]) => `${k} = ${v}\n`)
    .join('')

/** The swtpm_setup argv that manufactures the TPM state in `tpmState` with `ca`. */
export function manufactureArgs(tpmState: string, ca: LocalCaFiles): string[] {
  return ['--tpm2', '--tpmstate', tpmState, '--create-ek-cert', '--config', ca.setupConfig, '--overwrite']
}

/**
 * A new TPM: its state in `tpmState` (created 0700), EKs and EK certificates from `ca`. Run it
 * before the TPM's swtpm first starts; the state then keeps them across restarts.
 */
export async function manufactureTpm(
  runner: Runner,
  tpmState: string,
  ca: LocalCaFiles,
  env?: NodeJS.ProcessEnv,
): Promise<void> {
  await mkdir(tpmState, { recursive: true, mode: 0o700 })
  // swtpm_setup and swtpm_localca leave scratch files in TMPDIR: a folder of our own beside the
  // TPM's state, removed after (or with the node, should this process be killed meanwhile)
  const scratch = await mkdtemp(path.join(path.dirname(path.resolve(tpmState)), '.swtpm-setup-'))
  try {
    await runner.run('swtpm_setup', manufactureArgs(tpmState, ca), {
      env: { ...(env ?? process.env), TMPDIR: scratch },
      timeoutMs: MANUFACTURE_TIMEOUT_MS,
    })
  } catch (cause) {
    throw new CliError(`manufacturing the TPM in ${tpmState} with EK certificates: ${messageOf(cause)}`, {
      cause,
      hint: "swtpm_setup and swtpm_localca come with Debian's swtpm-tools; or use --attestation qemu-vtpm",
    })
  } finally {
    await rm(scratch, { recursive: true, force: true })
  }
}
