/**
 * Which refusal verifySnpEvidence gives, in its words, for what the other SEV-SNP tests only refuse
 * by field: the signer missing or unreadable, the chain that offers no issuer, signing-key pins, an
 * ARK that shares the pinned ARK's name but not its key, a pinned "ARK" that is not self-signed,
 * validity, the signature algorithm, an unsigned report, and the messages of the report checks.
 * Reports come from the SEV-SNP stand-in (TEST DOUBLE).
 */
import { generateKeyPairSync, randomBytes, X509Certificate, type KeyObject } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { AttestationError, EvidenceMismatchError } from '../../../src/lib/attestation/errors.js'
import {
  encodeAmdExtensions,
  parseCertificateTable,
  verifySnpEvidence,
  type SnpEvidence,
  type SnpPolicy,
} from '../../../src/lib/attestation/snp/index.js'
import { createSnpStandIn } from '../../../src/lib/cvm-standin/index.js'
import { type SnpStandIn } from '../../../src/lib/cvm-standin/snp.js'
import {
  distinguishedName,
  generateEcdsaP256KeyPair,
  generateEcdsaP384KeyPair,
  generateRsaKeyPair,
  parseCertificate,
  randomSerialNumber,
  signCertificate,
  toPem,
  caBasicConstraints,
  type CertificateExtension,
} from '../../../src/lib/x509/index.js'
import { policyFor, recordedCases, refusal } from './helpers.js'

const oneLine = (name: string) => name.split('\n').join(', ')

function mismatchOf(err: Error): EvidenceMismatchError {
  expect(err, err.message).to.be.instanceOf(EvidenceMismatchError)
  return err as EvidenceMismatchError
}

describe('verifySnpEvidence: which refusal, in its words', function () {
  this.timeout(60_000)
  let s: SnpStandIn
  let other: SnpStandIn
  let report: Buffer
  let evidence: SnpEvidence
  let policy: SnpPolicy
  let ark: X509Certificate
  let ask: X509Certificate
  before(async () => {
    ;[s, other] = await Promise.all([
      createSnpStandIn({ signer: 'VCEK' }),
      createSnpStandIn({ signer: 'VCEK' }),
    ])
    report = s.report({ reportData: Buffer.alloc(64, 7), measurement: randomBytes(48) })
    const table = parseCertificateTable(s.certificateTable())
    evidence = { report, signer: table.vcek, chain: [table.ask!] }
    ark = new X509Certificate(s.ark)
    ask = new X509Certificate(s.ask)
    policy = { ...policyFor(report, new Date()), arks: [ark] }
  })
  const run = (e: Partial<SnpEvidence> = {}, p: Partial<SnpPolicy> = {}) =>
    verifySnpEvidence({ ...evidence, ...e }, { ...policy, ...p })

  it('accepts the evidence as made', () => {
    expect(run().signer).to.equal('VCEK')
  })

  describe('the signer and the chain', () => {
    it('an empty signer is no signer; bytes that are no certificate are refused with their cause', () => {
      expect(refusal(() => run({ signer: Buffer.alloc(0) })).message).to.match(
        /^the evidence carries no VCEK: /,
      )
      const err = refusal(() => run({ signer: Buffer.from('not a certificate') }))
      expect(err).to.be.instanceOf(AttestationError)
      expect(err.message).to.equal('VCEK certificate is not an X.509 certificate (DER or PEM)')
      expect(err.cause).to.be.instanceOf(Error)
    })

    it('no ASK among the chain: names the signer’s issuer and what was offered', () => {
      const issuer = oneLine(new X509Certificate(evidence.signer!).issuer)
      expect(refusal(() => run({ chain: [] })).message).to.equal(
        `no ASK in the evidence issued the VCEK (issuer ${issuer}): offered none`,
      )
      const foreign = parseCertificateTable(other.certificateTable())
      expect(refusal(() => run({ chain: [foreign.vcek!, Buffer.from(s.ark)] })).message).to.equal(
        `no ASK in the evidence issued the VCEK (issuer ${issuer}): offered ${oneLine(new X509Certificate(foreign.vcek!).subject)}; ${oneLine(ark.subject)}`,
      )
    })

    it('signing-key pins: any one of them may match; none matching is refused, naming the ASK', () => {
      const otherAsk = new X509Certificate(other.ask)
      expect(run({}, { signingKeyPins: [otherAsk, ask] }).signer).to.equal('VCEK')
      const err = mismatchOf(refusal(() => run({}, { signingKeyPins: [otherAsk] })))
      expect([err.field, err.expected, err.found]).to.deep.equal([
        'ASK',
        'one of 1 pinned signing keys',
        `${oneLine(ask.subject)} (SHA-256 ${ask.fingerprint256})`,
      ])
      expect(err.message).to.match(/^SEV-SNP chain: ASK: /)
    })

    it('an ARK with the same name but another key is not the ASK’s issuer; none pinned says so', () => {
      const otherArk = new X509Certificate(other.ark)
      expect(otherArk.subject).to.equal(ark.subject) // the same name: only the key tells them apart
      const err = mismatchOf(refusal(() => run({}, { arks: [otherArk] })))
      expect([err.field, err.expected, err.found]).to.deep.equal([
        'ASK issuer',
        `one of the pinned ARKs (${oneLine(otherArk.subject)})`,
        `${oneLine(ask.issuer)}, which no pinned ARK verifies`,
      ])
      expect(err.message).to.match(/^SEV-SNP chain: /)
      expect(mismatchOf(refusal(() => run({}, { arks: [] }))).expected).to.equal(
        'one of the pinned ARKs (none pinned)',
      )
      const otherAsk = new X509Certificate(other.ask)
      expect(mismatchOf(refusal(() => run({}, { arks: [otherArk, otherAsk] }))).expected).to.equal(
        `one of the pinned ARKs (${oneLine(otherArk.subject)}; ${oneLine(otherAsk.subject)})`,
      )
    })

    it('a pinned "ARK" with the real ARK’s name and key, naming itself its issuer but signed by another key, is not self-signed: refused', async () => {
      const someone = await generateEcdsaP256KeyPair()
      const fake = new X509Certificate(
        toPem(
          signCertificate(
            {
              serialNumber: randomSerialNumber(),
              subject: parseCertificate(s.ark).tbsCertificate.subject,
              issuer: parseCertificate(s.ark).tbsCertificate.subject, // names itself as its issuer
              notBefore: new Date(Date.now() - 3600_000),
              notAfter: new Date(Date.now() + 3600_000),
              publicKey: ark.publicKey,
              extensions: [caBasicConstraints()],
            },
            someone.privateKey,
          ),
        ),
      )
      const err = refusal(() => run({}, { arks: [fake] }))
      expect(err).not.to.be.instanceOf(EvidenceMismatchError)
      expect(err.message).to.equal(
        `SEV-SNP chain: the pinned ARK ${oneLine(fake.subject)} is not self-signed`,
      )
    })

    it('the same, signed by another RSA key as AMD signs (RSA-PSS): it names itself its issuer, and still its signature fails', () => {
      const someone = generateRsaKeyPair()
      const tbs = parseCertificate(s.ark).tbsCertificate
      const fake = new X509Certificate(
        toPem(
          signCertificate(
            {
              serialNumber: randomSerialNumber(),
              subject: tbs.subject,
              issuer: tbs.subject,
              notBefore: new Date(Date.now() - 3600_000),
              notAfter: new Date(Date.now() + 3600_000),
              publicKey: ark.publicKey,
              extensions: [caBasicConstraints()],
            },
            someone.privateKey,
            'rsa-pss-sha384',
          ),
        ),
      )
      expect(fake.checkIssued(fake), 'names and key type match').to.equal(true)
      expect(fake.verify(fake.publicKey)).to.equal(false)
      expect(refusal(() => run({}, { arks: [fake] })).message).to.equal(
        `SEV-SNP chain: the pinned ARK ${oneLine(fake.subject)} is not self-signed`,
      )
    })

    it('the bounds of the validity are inside it', () => {
      const vcek = new X509Certificate(evidence.signer!)
      // the stand-in's certificates start together; the VCEK ends first (7 years, the CAs 25)
      expect(new Date(ask.validFrom).getTime()).to.equal(new Date(vcek.validFrom).getTime())
      expect(new Date(ark.validFrom).getTime()).to.equal(new Date(vcek.validFrom).getTime())
      expect(run({}, { now: () => new Date(vcek.validFrom) }).signer).to.equal('VCEK')
      expect(run({}, { now: () => new Date(vcek.validTo) }).signer).to.equal('VCEK')
    })

    it('outside the validity of a certificate: names which, its validity and now', () => {
      const vcek = new X509Certificate(evidence.signer!)
      const late = new Date(new Date(vcek.validTo).getTime() + 1000)
      const err = mismatchOf(refusal(() => run({}, { now: () => late })))
      expect([err.field, err.expected, err.found]).to.deep.equal([
        'VCEK validity',
        `${new Date(vcek.validFrom).toISOString()} to ${new Date(vcek.validTo).toISOString()}`,
        `now ${late.toISOString()}`,
      ])
      expect(err.message).to.match(/^SEV-SNP chain: VCEK validity: /)
    })
  })

  describe('a signer certificate made here (a chain of our own under a pinned ARK of our own)', () => {
    /** ARK → ASK → signer, P-256 CAs; the signer's key and AMD extensions as given, the ARK's CN too. */
    async function chainWith(
      signerKey: KeyObject,
      extensions: Parameters<typeof encodeAmdExtensions>[0],
      arkCn = 'ARK-Milan',
    ) {
      const [arkKeys, askKeys] = await Promise.all([generateEcdsaP256KeyPair(), generateEcdsaP256KeyPair()])
      const day = 24 * 3600_000
      const cert = (
        cn: string,
        issuer: string,
        key: KeyObject,
        by: KeyObject,
        exts: CertificateExtension[],
      ) =>
        toPem(
          signCertificate(
            {
              serialNumber: randomSerialNumber(),
              subject: distinguishedName([['CN', cn]]),
              issuer: distinguishedName([['CN', issuer]]),
              notBefore: new Date(Date.now() - day),
              notAfter: new Date(Date.now() + day),
              publicKey: key,
              extensions: exts,
            },
            by,
          ),
        )
      const arkPem = cert(arkCn, arkCn, arkKeys.publicKey, arkKeys.privateKey, [caBasicConstraints()])
      const askPem = cert('SEV-Milan', arkCn, askKeys.publicKey, arkKeys.privateKey, [caBasicConstraints()])
      const signerPem = cert(
        'SEV-VCEK',
        'SEV-Milan',
        signerKey,
        askKeys.privateKey,
        encodeAmdExtensions(extensions),
      )
      return {
        evidence: { signer: Buffer.from(signerPem), chain: [Buffer.from(askPem)] },
        policy: { arks: [new X509Certificate(arkPem)] },
      }
    }
    const tcb = () => s.tcb

    it('a signer with both a hwID and a cspId, or neither, is neither a VCEK nor a VLEK', async () => {
      const key = (await generateEcdsaP384KeyPair()).publicKey
      for (const ext of [
        { tcb: tcb(), productName: 'Milan-B0', hwId: s.chipId, cspId: 'a cloud' },
        { tcb: tcb(), productName: 'Milan-B0' },
      ]) {
        const made = await chainWith(key, ext)
        const err = mismatchOf(refusal(() => run(made.evidence, made.policy)))
        expect(err.message).to.equal(
          "SEV-SNP evidence: signer certificate: expected a VCEK (the report's SIGNING_KEY), found neither a VCEK (hwID extension) nor a VLEK (cspId extension)",
        )
      }
    })

    it('a VCEK whose key is not ECDSA P-384 is refused by its key, naming what it is', async () => {
      const ext = { tcb: tcb(), productName: 'Milan-B0', hwId: s.chipId }
      const p256 = await chainWith((await generateEcdsaP256KeyPair()).publicKey, ext)
      expect(refusal(() => run(p256.evidence, p256.policy)).message).to.equal(
        'VCEK key: expected ECDSA P-384, found ec prime256v1',
      )
      const rsa = await chainWith(generateRsaKeyPair().publicKey, ext)
      expect(refusal(() => run(rsa.evidence, rsa.policy)).message).to.equal(
        'VCEK key: expected ECDSA P-384, found rsa',
      )
      // an SM2 key: an EC point, but of a key type node:crypto does not name
      const sm2 = generateKeyPairSync('ec', { namedCurve: 'SM2' }).publicKey
      const unnamed = await chainWith(sm2, ext)
      expect(new X509Certificate(unnamed.evidence.signer).publicKey.asymmetricKeyType).to.equal(undefined)
      expect(refusal(() => run(unnamed.evidence, unnamed.policy)).message).to.equal(
        'VCEK key: expected ECDSA P-384, found unknown',
      )
    })

    // the stand-in's own signer key, certified here: its reports verify under this chain
    const standInKey = () => new X509Certificate(s.signerCert).publicKey

    it('a signer certificate naming a Turin product: refused, its TCB layout is not supported', async () => {
      for (const productName of ['Turin', 'Turin-B0']) {
        const made = await chainWith(standInKey(), { tcb: tcb(), productName, hwId: s.chipId })
        const err = refusal(() => run(made.evidence, made.policy))
        expect(err).to.be.instanceOf(AttestationError)
        expect(err.message).to.equal(
          'SEV-SNP report from a Turin processor: its TCB_VERSION layout is not supported yet',
        )
      }
    })

    it('a signer certificate naming no product: the product is the ARK’s CN after "ARK-", else unknown', async () => {
      const ext = { tcb: tcb(), hwId: s.chipId }
      const milan = await chainWith(standInKey(), ext)
      expect(run(milan.evidence, milan.policy).product).to.equal('Milan')
      const genoa = await chainWith(standInKey(), ext, 'ARK-Genoa')
      expect(run(genoa.evidence, genoa.policy).product).to.equal('Genoa')
      const unnamed = await chainWith(standInKey(), ext, 'Some Root')
      expect(run(unnamed.evidence, unnamed.policy).product).to.equal('unknown')
      // a Turin ARK is refused by its name as well
      const turin = await chainWith(standInKey(), ext, 'ARK-Turin')
      expect(refusal(() => run(turin.evidence, turin.policy)).message).to.match(
        /^SEV-SNP report from a Turin/,
      )
      // a named product wins over the ARK's name, cut at its stepping
      const named = await chainWith(standInKey(), { ...ext, productName: 'Genoa-B1' })
      expect(run(named.evidence, named.policy).product).to.equal('Genoa')
    })
  })

  it('evidence without a chain offers no ASK', () => {
    expect(refusal(() => run({ chain: undefined })).message).to.match(/: offered none$/)
  })

  it("without a clock in the policy, the real one: AWS's recorded VLEK expired in December 2025", () => {
    const aws = recordedCases().find((c) => c.signer === 'VLEK')!
    const withClock = policyFor(aws.evidence.report, aws.now)
    expect(verifySnpEvidence(aws.evidence, withClock).signer).to.equal('VLEK')
    const { now: _, ...withoutClock } = withClock
    const err = mismatchOf(refusal(() => verifySnpEvidence(aws.evidence, withoutClock)))
    expect(err.field).to.equal('VLEK validity')
  })

  describe('the report', () => {
    it('a signature algorithm other than ECDSA P-384: refused by SIGNATURE_ALGO before the signature is checked', () => {
      const changed = Buffer.from(report)
      changed.writeUInt32LE(2, 0x34)
      const err = mismatchOf(refusal(() => run({ report: changed })))
      expect([err.field, err.expected, err.found]).to.deep.equal([
        'SIGNATURE_ALGO',
        '1 (ECDSA P-384 with SHA-384)',
        '2',
      ])
      expect(err.message).to.match(/^SEV-SNP report: /)
    })

    it('SIGNING_KEY 7 (none): an unsigned report, refused as such', () => {
      const unsigned = Buffer.from(report)
      unsigned.writeUInt32LE((unsigned.readUInt32LE(0x48) & ~0x1c) | (7 << 2), 0x48)
      const err = refusal(() => run({ report: unsigned }))
      expect(err).not.to.be.instanceOf(EvidenceMismatchError)
      expect(err.message).to.equal(
        'SEV-SNP report: SIGNER_INFO.SIGNING_KEY is 7 (none): the report is unsigned',
      )
    })

    it('a changed byte: SIGNATURE, naming the signer and the bytes signed', () => {
      const changed = Buffer.from(report)
      changed[0x50] = (changed[0x50] ?? 0) ^ 1
      const err = mismatchOf(refusal(() => run({ report: changed })))
      expect(err.field).to.equal('SIGNATURE')
      expect(err.expected).to.equal(
        `an ECDSA P-384 signature by the VCEK (${oneLine(new X509Certificate(evidence.signer!).subject)}) over bytes 0x000–0x29F`,
      )
      expect(err.found).to.match(/^r=[0-9a-f]+ s=[0-9a-f]+, which does not verify$/)
      expect(err.message).to.match(/^SEV-SNP report: SIGNATURE: /)
    })

    it('the report checks name their context: TCB against the certificate and the minimum, CHIP_ID, measurement, REPORT_DATA', () => {
      const tcb = mismatchOf(
        refusal(() =>
          run({
            report: s.report({ reportData: Buffer.alloc(64, 7), tcb: { ...s.tcb, snp: s.tcb.snp + 1 } }),
          }),
        ),
      )
      expect(tcb.message).to.match(/^SEV-SNP report: REPORTED_TCB\.snp: /)
      const minimum = mismatchOf(refusal(() => run({}, { minimumTcb: { ...s.tcb, tee: s.tcb.tee + 1 } })))
      expect([minimum.field, minimum.expected, minimum.found]).to.deep.equal([
        'REPORTED_TCB.tee',
        `at least ${s.tcb.tee + 1}`,
        String(s.tcb.tee),
      ])
      expect(minimum.message).to.match(/^SEV-SNP report: /)
      const chip = randomBytes(64)
      const chipErr = mismatchOf(
        refusal(() =>
          run(
            { report: s.report({ reportData: Buffer.alloc(64, 7), chipId: chip }) },
            { reportData: Buffer.alloc(64, 7), launchMeasurement: undefined },
          ),
        ),
      )
      expect([chipErr.field, chipErr.expected]).to.deep.equal([
        'CHIP_ID',
        `${s.chipId.toString('hex')} (the VCEK's hwID)`,
      ])
      expect(chipErr.message).to.match(/^SEV-SNP report: CHIP_ID: /)
      const m = mismatchOf(refusal(() => run({}, { launchMeasurement: Buffer.alloc(48) })))
      expect(m.message).to.match(/^SEV-SNP report: MEASUREMENT: expected 0{96}, found [0-9a-f]{96}$/)
      const d = mismatchOf(refusal(() => run({}, { reportData: Buffer.alloc(64) })))
      expect(d.message).to.match(/^SEV-SNP report: REPORT_DATA: expected 0{128}, found (07){64}$/)
    })

    it('the guest policy: each bit refused with the policy value it found', () => {
      const withPolicy = (bits: bigint) =>
        s.report({ reportData: Buffer.alloc(64, 7), policy: 0x20000n | bits })
      const at = (bits: bigint, p: Partial<SnpPolicy> = {}) =>
        mismatchOf(refusal(() => run({ report: withPolicy(bits) }, { launchMeasurement: undefined, ...p })))
      const debug = at(1n << 19n, { allowMigrationAgent: true, allowSmt: true })
      expect(debug.message).to.equal(
        'SEV-SNP report: POLICY.DEBUG: expected 0 (debugging is never allowed), found 1 (policy 0xa0000)',
      )
      const ma = at(1n << 18n)
      expect(ma.message).to.equal(
        'SEV-SNP report: POLICY.MIGRATE_MA: expected 0 (no migration agent allowed), found 1 (policy 0x60000)',
      )
      const smt = at(1n << 16n, { allowSmt: false })
      expect(smt.message).to.equal(
        'SEV-SNP report: POLICY.SMT: expected 0 (SMT not allowed), found 1 (policy 0x30000)',
      )
    })

    it('a VLEK report offered with a VCEK: the signer kind refusal, in its words', async () => {
      const vlek = await createSnpStandIn({ signer: 'VLEK' })
      const r = vlek.report({ reportData: Buffer.alloc(64) })
      const err = mismatchOf(
        refusal(() =>
          verifySnpEvidence(
            { ...evidence, report: r },
            {
              ...policyFor(r, new Date()),
              arks: [ark],
            },
          ),
        ),
      )
      expect(err.message).to.equal(
        "SEV-SNP evidence: signer certificate: expected a VLEK (the report's SIGNING_KEY), found a VCEK",
      )
    })
  })
})
