/**
 * TEST DOUBLE at the hardware boundary: a stand-in for AMD's SEV-SNP firmware and key server, for
 * tests and the local cluster where no SNP hardware exists. It has its own ARK, ASK/ASVK and
 * VCEK/VLEK (subjects say "STAND-IN, not AMD") and signs correctly laid out 1184-byte reports. A
 * verifier accepts them only if its policy pins this stand-in's ARK instead of AMD's.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { snp } from '../attestation/index.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP384KeyPair,
  keyUsage,
  randomSerialNumber,
  signCertificate,
  toPem,
  type CertificateExtension,
} from '../x509/index.js'

export interface SnpStandInTcb {
  bootloader: number
  tee: number
  snp: number
  microcode: number
}

export interface SnpStandInReportFields {
  reportData: Buffer
  /** 48 bytes; zeros when not given. */
  measurement?: Buffer
  /** GUEST_POLICY; default 0x20000 (ABI 0.0, the must-be-one bit, no SMT, no debug, no migration agent). */
  policy?: bigint
  version?: 2 | 3
  /** Written as current, reported, committed and launch TCB; default the stand-in's own. */
  tcb?: SnpStandInTcb
  /** CHIP_ID; default the stand-in's (the VCEK's hwID). */
  chipId?: Buffer
  /** SIGNER_INFO.MASK_CHIP_KEY: the verifier then skips the hwID comparison. */
  maskChipKey?: boolean
}

export interface SnpStandIn {
  readonly signer: 'VCEK' | 'VLEK'
  readonly product: 'Milan'
  readonly tcb: SnpStandInTcb
  /** 64 bytes: the VCEK's hwID and every report's CHIP_ID. */
  readonly chipId: Buffer
  /** PEM certificates: the root, the ASK (or ASVK for a VLEK), the VCEK or VLEK. */
  readonly ark: string
  readonly ask: string
  readonly signerCert: string
  report(fields: SnpStandInReportFields): Buffer
  /** The GUID table SEV firmware returns with an extended report: VCEK/VLEK, ASK/ASVK, ARK. */
  certificateTable(): Buffer
}

export const SNP_STANDIN_DEFAULT_POLICY = 0x20000n
const DEFAULT_TCB: SnpStandInTcb = { bootloader: 3, tee: 0, snp: 20, microcode: 209 }
// AMD's ARK and ASK are RSA 4096; 2048 signs the same way (RSA-PSS, SHA-384) and generates in a
// fraction of the time, which matters in tests that make a stand-in each.
const STANDIN_RSA_BITS = 2048
const DAY_MS = 24 * 3600 * 1000
const generateRsa = promisify(generateKeyPair)
const STANDIN = 'STAND-IN, not AMD'
const FILES = {
  ark: 'ark.pem',
  ask: 'ask.pem',
  signer: 'signer.pem',
  key: 'signer-key.pem',
  meta: 'standin.json',
}

export async function createSnpStandIn(
  opts: { signer?: 'VCEK' | 'VLEK'; tcb?: SnpStandInTcb; product?: 'Milan' } = {},
): Promise<SnpStandIn> {
  const kind = opts.signer ?? 'VCEK'
  const tcb = { ...(opts.tcb ?? DEFAULT_TCB) }
  const product = opts.product ?? 'Milan'
  const chipId = randomBytes(64)
  const [arkKeys, askKeys, signerKeys] = await Promise.all([
    generateRsa('rsa', { modulusLength: STANDIN_RSA_BITS }),
    generateRsa('rsa', { modulusLength: STANDIN_RSA_BITS }),
    generateEcdsaP384KeyPair(),
  ])
  const now = Date.now()
  const cert = (
    cn: string,
    issuerCn: string,
    publicKey: KeyObject,
    signingKey: KeyObject,
    years: number,
    extensions: CertificateExtension[],
  ) =>
    signCertificate(
      {
        serialNumber: randomSerialNumber(),
        subject: distinguishedName([
          ['O', STANDIN],
          ['CN', `${cn} (${STANDIN})`],
        ]),
        issuer: distinguishedName([
          ['O', STANDIN],
          ['CN', `${issuerCn} (${STANDIN})`],
        ]),
        notBefore: new Date(now - DAY_MS),
        notAfter: new Date(now + years * 365 * DAY_MS),
        publicKey,
        extensions,
      },
      signingKey,
      'rsa-pss-sha384',
    )
  const ca = [caBasicConstraints(), keyUsage(['keyCertSign'])]
  const arkCn = `ARK-${product}`
  const askCn = kind === 'VCEK' ? `SEV-${product}` : `SEV-VLEK-${product}`
  const ark = cert(arkCn, arkCn, arkKeys.publicKey, arkKeys.privateKey, 25, ca)
  const ask = cert(askCn, arkCn, askKeys.publicKey, arkKeys.privateKey, 25, ca)
  const amd = snp.encodeAmdExtensions({
    tcb,
    productName: kind === 'VCEK' ? `${product}-B0` : product,
    ...(kind === 'VCEK' ? { hwId: chipId } : { cspId: `${STANDIN} cloud` }),
  })
  const leaf = cert(`SEV-${kind}`, askCn, signerKeys.publicKey, askKeys.privateKey, 7, amd)
  return standIn({
    kind,
    product,
    tcb,
    chipId,
    ark: toPem(ark),
    ask: toPem(ask),
    signerCert: toPem(leaf),
    key: signerKeys.privateKey,
  })
}

/** Writes the certificates, the signer's key (0600, never overwritten) and the settings to dir. */
export async function saveSnpStandIn(s: SnpStandIn, dir: string): Promise<void> {
  const key = KEYS.get(s)
  if (!key) throw new Error('not a stand-in made by createSnpStandIn or loadSnpStandIn')
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const meta = { signer: s.signer, product: s.product, tcb: s.tcb, chipId: s.chipId.toString('hex') }
  await writeFile(join(dir, FILES.key), key.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
    flag: 'wx',
  })
  await writeFile(join(dir, FILES.ark), s.ark, { flag: 'wx' })
  await writeFile(join(dir, FILES.ask), s.ask, { flag: 'wx' })
  await writeFile(join(dir, FILES.signer), s.signerCert, { flag: 'wx' })
  await writeFile(join(dir, FILES.meta), `${JSON.stringify(meta, null, 2)}\n`, { flag: 'wx' })
}

/** Reads what saveSnpStandIn wrote; refuses a key that does not belong to the signer certificate. */
export async function loadSnpStandIn(dir: string): Promise<SnpStandIn> {
  const read = (name: string) => readFile(join(dir, name), 'utf8')
  const signerCert = await read(FILES.signer)
  const key = createPrivateKey(await read(FILES.key))
  const spki = (k: KeyObject) => k.export({ type: 'spki', format: 'der' })
  if (!spki(new X509Certificate(signerCert).publicKey).equals(spki(createPublicKey(key))))
    throw new Error(`${join(dir, FILES.key)} is not the key of ${join(dir, FILES.signer)}`)
  const meta = JSON.parse(await read(FILES.meta)) as Partial<{
    signer: string
    tcb: SnpStandInTcb
    chipId: string
  }>
  if (meta.signer !== 'VCEK' && meta.signer !== 'VLEK')
    throw new Error(`${join(dir, FILES.meta)}: signer must be VCEK or VLEK`)
  if (!meta.tcb || typeof meta.chipId !== 'string' || !/^[0-9a-f]{128}$/.test(meta.chipId))
    throw new Error(`${join(dir, FILES.meta)}: tcb and a 64-byte hex chipId are required`)
  return standIn({
    kind: meta.signer,
    product: 'Milan',
    tcb: meta.tcb,
    chipId: Buffer.from(meta.chipId, 'hex'),
    ark: await read(FILES.ark),
    ask: await read(FILES.ask),
    signerCert,
    key,
  })
}

/** The signer's private key per stand-in, kept off the object so that logging one shows no key. */
const KEYS = new WeakMap<SnpStandIn, KeyObject>()

function standIn(p: {
  kind: 'VCEK' | 'VLEK'
  product: 'Milan'
  tcb: SnpStandInTcb
  chipId: Buffer
  ark: string
  ask: string
  signerCert: string
  key: KeyObject
}): SnpStandIn {
  const der = (pem: string) => Buffer.from(new X509Certificate(pem).raw)
  const s: SnpStandIn = {
    signer: p.kind,
    product: p.product,
    tcb: p.tcb,
    chipId: p.chipId,
    ark: p.ark,
    ask: p.ask,
    signerCert: p.signerCert,
    report: (fields) => signedReport(fields, p),
    certificateTable: () =>
      snp.encodeCertificateTable({
        [p.kind === 'VCEK' ? 'vcek' : 'vlek']: der(p.signerCert),
        [p.kind === 'VCEK' ? 'ask' : 'asvk']: der(p.ask),
        ark: der(p.ark),
      }),
  }
  KEYS.set(s, p.key)
  return s
}

function signedReport(
  fields: SnpStandInReportFields,
  p: { kind: 'VCEK' | 'VLEK'; tcb: SnpStandInTcb; chipId: Buffer; key: KeyObject },
): Buffer {
  const O = snp.SNP_REPORT_OFFSET
  if (fields.reportData.length !== 64)
    throw new Error(`reportData is ${fields.reportData.length} bytes, expected 64`)
  const measurement = fields.measurement ?? Buffer.alloc(48)
  if (measurement.length !== 48) throw new Error(`measurement is ${measurement.length} bytes, expected 48`)
  const version = fields.version ?? 3
  const tcb = fields.tcb ?? p.tcb
  const r = Buffer.alloc(snp.SNP_REPORT_SIZE)
  r.writeUInt32LE(version, O.version)
  r.writeBigUInt64LE(fields.policy ?? SNP_STANDIN_DEFAULT_POLICY, O.policy)
  r.writeUInt32LE(1, O.signatureAlgo) // ECDSA P-384 with SHA-384
  r.writeUInt32LE(((p.kind === 'VCEK' ? 0 : 1) << 2) | (fields.maskChipKey ? 2 : 0), O.signerInfo)
  for (const at of [O.currentTcb, O.reportedTcb, O.committedTcb, O.launchTcb]) writeTcb(r, at, tcb)
  fields.reportData.copy(r, O.reportData)
  measurement.copy(r, O.measurement)
  randomBytes(32).copy(r, O.reportId)
  if (version >= 3) r.set([0x19, 0x01, 0x00], O.cpuidFamily) // Milan B0: family 19h, model 01h, stepping 0
  const chipId = fields.chipId ?? p.chipId
  if (chipId.length !== 64) throw new Error(`chipId is ${chipId.length} bytes, expected 64`)
  chipId.copy(r, O.chipId)
  r.set([8, 55, 1], O.currentBuild) // firmware 1.55 build 8: a plausible Milan version
  r.set([8, 55, 1], O.committedBuild)
  const signature = sign('sha384', r.subarray(0, snp.SNP_SIGNED_LENGTH), {
    key: p.key,
    dsaEncoding: 'ieee-p1363',
  })
  // hardware stores r and s little-endian in 72-byte fields
  Buffer.from(signature.subarray(0, 48)).reverse().copy(r, O.signatureR)
  Buffer.from(signature.subarray(48, 96)).reverse().copy(r, O.signatureS)
  return r
}

/** TCB_VERSION, Milan layout: bootloader byte 0, TEE byte 1, SNP byte 6, microcode byte 7. */
function writeTcb(r: Buffer, at: number, tcb: SnpStandInTcb): void {
  r[at] = tcb.bootloader
  r[at + 1] = tcb.tee
  r[at + 6] = tcb.snp
  r[at + 7] = tcb.microcode
}
