import { createHash, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { testCertificate } from '../support/test-ca.js'
import { tpm2Tools } from '../tpm/tpm2-tools.js'
import {
  objectName,
  readEkCertificate,
  readPcrs,
  TPMA_OBJECT,
  withTpm,
  type OpenTpm,
} from '../../src/lib/tpm/index.js'
import { CredentialActivationError } from '../../src/lib/tpm/activate-credential.js'
import {
  AttestationError,
  createIssuer,
  createValidator,
  type Measurements,
} from '../../src/lib/attestation/index.js'
import {
  createTpmEkIssuer,
  createTpmEkValidator,
  type TpmEkIssuer,
  type TpmEkValidator,
} from '../../src/lib/attestation/tpm-ek.js'
import {
  decodeActivationRequest,
  encodeActivationRequest,
} from '../../src/lib/attestation/activation-request.js'
import { VARIANT_OIDS } from '../../src/lib/attestation/variant.js'
import {
  decodeDocument,
  encodeDocument,
  type AttestationDocument,
} from '../../src/lib/attestation/document.js'
import { createAttestedCertificate, verifyAttestedCertificate } from '../../src/lib/atls/certificate.js'
import { CliError } from '../../src/lib/errors/index.js'
import { TpmParseError } from '../../src/lib/tpm/index.js'
import { TpmError } from '../../src/lib/tpm/errors.js'
import { measureBoot } from '../../src/lib/attestation/eventlog/write.js'
import { BOOT } from './eventlog/boot-log.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()
const PCRS = [0, 4, 7, 15]

async function measurementsOf(open: OpenTpm): Promise<Measurements> {
  const pcrs = await readPcrs(open, PCRS)
  return new Map(PCRS.map((i) => [i, { expected: pcrs.get(i) ?? Buffer.alloc(32), warnOnly: false }]))
}

/** The document with `edit` applied to its decoded form, encoded again. */
function edited(doc: Buffer, edit: (d: AttestationDocument) => void): Buffer {
  const d = decodeDocument(doc)
  edit(d)
  return encodeDocument(d)
}

/** The AK public area with `bits` cleared from its TPMA_OBJECT (offset 4: after type and nameAlg). */
function withoutAttributes(akPub: Buffer, bits: number): Buffer {
  const out = Buffer.from(akPub)
  out.writeUInt32BE((out.readUInt32BE(4) & ~bits) >>> 0, 4)
  return out
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('accepted'),
    (err: unknown) => {
      expect(err).to.be.instanceOf(AttestationError)
      return (err as Error).message
    },
  )

describe('tpm-ek attestation: EK certificate chain and credential activation against swtpm', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let other: SwtpmHandle
  let tmp: TempDir
  let root: X509Certificate
  let intermediate: X509Certificate
  let issuer: TpmEkIssuer
  let validator: TpmEkValidator
  let m: Measurements
  const userData = sha256(Buffer.from('tls key'))
  const nonce = randomBytes(32)

  before(async () => {
    ;[tpm, other, tmp] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
      makeTempDir('constell-tpm-ek-'),
    ])
    root = new X509Certificate(tpm.ekCa!.root)
    intermediate = new X509Certificate(tpm.ekCa!.intermediate)
    // the manufacturer's intermediate in the profile's first chain index, as a TPM may carry it
    await writeFile(path.join(tmp.dir, 'chain.der'), intermediate.raw)
    const tools = tpm2Tools(tpm, tmp.dir)
    await tools('tpm2_nvdefine', [
      '0x01c00100',
      '-C',
      'o',
      '-s',
      String(intermediate.raw.length),
      '-a',
      'ownerread|ownerwrite|authread|authwrite',
    ])
    await tools('tpm2_nvwrite', ['0x01c00100', '-C', 'o', '-i', 'chain.der'])
    issuer = createTpmEkIssuer(tpm.open)
    m = await measurementsOf(tpm.open)
    validator = createTpmEkValidator(m, [root])
  })
  after(async () => {
    await Promise.all([tpm?.stop(), other?.stop(), tmp?.cleanup()])
  })

  it('issues a document the validator trusts: the ECC EK certificate (preferred: derived in ms), then the intermediate from NV', async () => {
    const doc = await issuer.issue(userData, nonce)
    const got = await validator.validate(doc, nonce)
    expect(got.userData).to.deep.equal(userData)
    expect(got.warnings).to.deep.equal([])
    const parsed = decodeDocument(doc)
    // swtpm certifies RSA 2048 and ECC P-384; the issuer takes the ECC one
    const eccEk = await withTpm(tpm.open, (t) => readEkCertificate(t, 'eccP384'))
    expect(parsed.ekCertificates).to.deep.equal([eccEk, intermediate.raw])
    expect(parsed.activationProof).to.equal(undefined)
    expect(got.activation?.proven).to.equal(false)
    expect(Object.keys(got), 'no event log, no eventLog key').not.to.include('eventLog')
    expect(got.activation?.akName).to.deep.equal(objectName(parsed.akPub))
    expect(got.activation?.ek.key.equals(new X509Certificate(eccEk).publicKey)).to.equal(true)
    expect(Object.keys(JSON.parse(doc.toString()) as object)).to.deep.equal([
      'Attestation',
      'InstanceInfo',
      'UserData',
      'EndorsementKeyCertificates',
    ])
    expect([issuer.variant, issuer.oid]).to.deep.equal(['tpm-ek', '1.3.9900.5.100'])
    expect([validator.variant, validator.oid]).to.deep.equal(['tpm-ek', '1.3.9900.5.100'])
    expect(VARIANT_OIDS['tpm-ek']).to.equal('1.3.9900.5.100')
  })

  it('createIssuer/createValidator build the variant, and the validator needs CA roots', async () => {
    const doc = await createIssuer('tpm-ek', tpm.open).issue(userData, nonce)
    const v = createValidator('tpm-ek', m, undefined, { roots: [root] })
    expect(v.variant).to.equal('tpm-ek')
    const got = await v.validate(doc, nonce)
    expect(got.userData).to.deep.equal(userData)
    expect(got.activation?.akName).to.deep.equal(objectName(decodeDocument(doc).akPub))
    expect(() => createValidator('tpm-ek', m)).to.throw(CliError, 'needs manufacturer root certificates')
    const leaf = testCertificate({ cn: 'not a CA', ca: false })
    expect(() => createTpmEkValidator(m, [leaf.cert])).to.throw(
      CliError,
      'CN=not a CA is not a CA certificate',
    )
  })

  it('reads the EK certificates once per issuer', async () => {
    let opens = 0
    const counting: OpenTpm = () => {
      opens++
      return tpm.open()
    }
    const spy = createTpmEkIssuer(counting)
    await spy.issue(userData, nonce)
    await spy.issue(userData, randomBytes(32))
    expect(opens).to.equal(3) // the certificates once, a quote each
  })

  it('an intermediate configured as the root also anchors the chain', async () => {
    const doc = await issuer.issue(userData, nonce)
    const got = await createTpmEkValidator(m, [intermediate]).validate(doc, nonce)
    expect(got.userData).to.deep.equal(userData)
    expect(got.warnings).to.deep.equal([])
    const [eccEk] = decodeDocument(doc).ekCertificates ?? []
    expect(got.activation?.ek.key.equals(new X509Certificate(eccEk!).publicKey)).to.equal(true)
    // the same document with the manufacturer's root alone anchored is refused: the intermediate did the anchoring
    const unrelated = testCertificate({ cn: 'unrelated root', ca: true })
    expect(await refusal(createTpmEkValidator(m, [unrelated.cert]).validate(doc, nonce))).to.match(
      /^EK certificate chain: .*chains to none of the 1 configured manufacturer roots \(root CN=unrelated root: is not its issuer/,
    )
  })

  it("refuses an EK certificate from another manufacturer's CA, naming the link", async () => {
    const doc = await issuer.issue(userData, nonce)
    const foreignRoot = new X509Certificate(other.ekCa!.root)
    const message = await refusal(createTpmEkValidator(m, [foreignRoot]).validate(doc, nonce))
    // both CAs call themselves swtpm-localca(-rootca): the names match, the key identifiers do not
    expect(message).to.equal(
      'EK certificate chain: EndorsementKeyCertificates[1] (CN=swtpm-localca), issued by CN=swtpm-localca-rootca, chains to none of the 1 configured manufacturer roots (root CN=swtpm-localca-rootca: is not its issuer (subject or key identifier differs))',
    )
    // the other TPM carries no intermediate: its EK certificate reaches no root at all
    const otherDoc = await createTpmEkIssuer(other.open).issue(userData, nonce)
    expect(decodeDocument(otherDoc).ekCertificates).to.have.length(1)
    const missing = await refusal(validator.validate(otherDoc, nonce))
    expect(missing).to.match(
      /EndorsementKeyCertificates\[0\] \(CN=unknown\), issued by CN=swtpm-localca, chains to none .*root CN=swtpm-localca-rootca: is not its issuer/,
    )
  })

  it('checks validity dates, CA flags and the EK key on every link', async () => {
    const doc = await issuer.issue(userData, nonce)
    const past = createTpmEkValidator(m, [root], undefined, { now: () => new Date('2000-01-01T00:00:00Z') })
    expect(await refusal(past.validate(doc, nonce))).to.match(
      /^EK certificate chain: EndorsementKeyCertificates\[0\] \(CN=unknown\) is not valid before /,
    )
    // our own CA certifies the TPM's real EK key, so the quote stays valid and only the chain differs
    const ekKey = new X509Certificate(decodeDocument(doc).ekCertificates![0]!).publicKey
    const ca = testCertificate({ cn: 'Test TPM Root', ca: true })
    const notCa = testCertificate({ cn: 'Test TPM Issuing', ca: false, issuer: ca })
    const issuing = testCertificate({ cn: 'Test TPM Issuing', ca: true, issuer: ca })
    const withChain = (...certs: Buffer[]) => edited(doc, (d) => (d.ekCertificates = certs))
    const ours = createTpmEkValidator(m, [ca.cert])
    const ek = (iss: typeof ca, extra: Partial<Parameters<typeof testCertificate>[0]> = {}) =>
      testCertificate({ cn: 'EK', ca: false, issuer: iss, publicKey: ekKey, ...extra }).der

    await ours.validate(withChain(ek(issuing), issuing.der), nonce)
    expect(await refusal(ours.validate(withChain(ek(notCa), notCa.der), nonce))).to.equal(
      'EK certificate chain: EndorsementKeyCertificates[1] (CN=Test TPM Issuing) signed EndorsementKeyCertificates[0] (CN=EK) but is not a CA certificate',
    )
    const expired = ek(issuing, { notBefore: new Date('2020-01-01'), notAfter: new Date('2021-01-01') })
    expect(await refusal(ours.validate(withChain(expired, issuing.der), nonce))).to.equal(
      'EK certificate chain: EndorsementKeyCertificates[0] (CN=EK) expired on 2021-01-01T00:00:00.000Z',
    )
    // a CA of the same name but another key (no key identifiers here): the signature tells them apart
    const impostor = testCertificate({ cn: 'Test TPM Root', ca: true })
    const fooled = createTpmEkValidator(m, [impostor.cert])
    expect(await refusal(fooled.validate(withChain(ek(issuing), issuing.der), nonce))).to.equal(
      "EK certificate chain: EndorsementKeyCertificates[1] (CN=Test TPM Issuing), issued by CN=Test TPM Root, chains to none of the 1 configured manufacturer roots (root CN=Test TPM Root: names it as issuer, but the signature does not verify with its key (another CA's key))",
    )
    // intermediates in any order, up to four certificates in all
    const i2 = testCertificate({ cn: 'Test TPM Issuing 2', ca: true, issuer: issuing })
    const i3 = testCertificate({ cn: 'Test TPM Issuing 3', ca: true, issuer: i2 })
    await ours.validate(withChain(ek(i3), issuing.der, i3.der, i2.der), nonce)
    // a key no EK template makes, certified by a trusted CA, is still no EK
    const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).publicKey
    const notEk = ek(issuing, { publicKey: p521 })
    expect(await refusal(ours.validate(withChain(notEk, issuing.der), nonce))).to.match(
      /^malformed attestation document: EndorsementKeyCertificates\[0\] holds no EK key \(EK public key: ec secp521r1 is not an EK Credential Profile key/,
    )
  })

  it('refuses an AK without fixedTPM or fixedParent, which the qemu-vtpm checks let pass', async () => {
    const doc = await issuer.issue(userData, nonce)
    for (const [bits, name] of [
      [TPMA_OBJECT.fixedTPM, 'fixedTPM'],
      [TPMA_OBJECT.fixedParent, 'fixedParent'],
      [TPMA_OBJECT.fixedTPM | TPMA_OBJECT.fixedParent, 'fixedTPM and fixedParent'],
    ] as const) {
      const loose = edited(doc, (d) => (d.akPub = withoutAttributes(d.akPub, bits)))
      expect(await refusal(validator.validate(loose, nonce))).to.equal(
        `attestation key lacks ${name}: a key that can leave its TPM proves nothing by credential activation`,
      )
      // the same key signed the quote: only the attribute check stands in the way
      await createValidator('qemu-vtpm', m).validate(loose, nonce)
    }
    const request = decodeActivationRequest(await issuer.activationRequest())
    request.akPub = withoutAttributes(request.akPub, TPMA_OBJECT.fixedTPM)
    expect(await refusal(validator.challengeActivation(encodeActivationRequest(request)))).to.match(
      /^attestation key lacks fixedTPM/,
    )
  })

  it('challenge → activate → proof: the secret round-trips and the validator accepts the proof', async () => {
    const request = await issuer.activationRequest()
    const { made, expected } = await validator.challengeActivation(request)
    expect(expected.secret).to.have.length(32)
    const secret = await issuer.activate(made)
    expect(secret).to.deep.equal(expected.secret)
    const doc = await issuer.issue(userData, nonce, secret)
    const got = await validator.validate(doc, nonce, expected)
    expect(got.activation?.proven).to.equal(true)
    expect(got.activation?.akName).to.deep.equal(expected.akName)
    expect(decodeDocument(doc).activationProof).to.deep.equal(secret)
  })

  it("a credential made for another TPM's EK and AK cannot be activated here", async () => {
    const otherIssuer = createTpmEkIssuer(other.open)
    const otherValidator = createTpmEkValidator(m, [new X509Certificate(other.ekCa!.intermediate)])
    const { made } = await otherValidator.challengeActivation(await otherIssuer.activationRequest())
    const err = await issuer.activate(made).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CredentialActivationError)
    // the other TPM itself can
    await otherIssuer.activate(made)
  })

  it("refuses to activate for our genuine EK but another TPM's AK (the AK is not in this TPM)", async () => {
    const ours = decodeActivationRequest(await issuer.activationRequest())
    const theirs = decodeActivationRequest(await createTpmEkIssuer(other.open).activationRequest())
    const { made } = await validator.challengeActivation(
      encodeActivationRequest({ ekCertificates: ours.ekCertificates, akPub: theirs.akPub }),
    )
    const err = await issuer.activate(made).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CredentialActivationError).with.property('reason', 'INTEGRITY')
    expect((err as Error).message).to.include('made for another AK or another EK')
  })

  it('refuses an activation request whose AkPub does not parse, naming the request and the field', async () => {
    const ours = decodeActivationRequest(await issuer.activationRequest())
    expect(
      await refusal(
        validator.challengeActivation(
          encodeActivationRequest({ ekCertificates: ours.ekCertificates, akPub: Buffer.from('garbage') }),
        ),
      ),
    ).to.match(/^malformed activation request: AkPub: /)
  })

  it('refuses a replayed proof, a missing proof and a proof from another AK, naming which', async () => {
    const request = await issuer.activationRequest()
    const first = await validator.challengeActivation(request)
    const second = await validator.challengeActivation(request)
    expect(second.expected.secret).not.to.deep.equal(first.expected.secret)
    const proof = await issuer.activate(first.made)
    const replayed = await issuer.issue(userData, nonce, proof)
    expect(await refusal(validator.validate(replayed, nonce, second.expected))).to.equal(
      "credential activation: ActivationProof is not this challenge's secret (a replayed or forged activation)",
    )
    expect(
      await refusal(validator.validate(await issuer.issue(userData, nonce), nonce, second.expected)),
    ).to.match(/^credential activation: the document carries no ActivationProof/)
    // a proof of another length is refused the same way, not by a crash of the comparison
    expect(
      await refusal(
        validator.validate(await issuer.issue(userData, nonce, Buffer.alloc(16)), nonce, second.expected),
      ),
    ).to.equal(
      "credential activation: ActivationProof is not this challenge's secret (a replayed or forged activation)",
    )
    const otherAk = {
      ...first.expected,
      akName: Buffer.concat([Buffer.from('000b', 'hex'), randomBytes(32)]),
    }
    expect(await refusal(validator.validate(replayed, nonce, otherAk))).to.match(
      /^credential activation: the quoting attestation key is not the one the credential was made for/,
    )
    // qemu-vtpm cannot prove any activation, so it refuses a caller that expects one
    expect(await refusal(createValidator('qemu-vtpm', m).validate(replayed, nonce, first.expected))).to.match(
      /cannot prove credential activation/,
    )
  })

  it('refuses a qemu-vtpm document, and issuing fails clearly on a TPM without EK certificate', async () => {
    const plainDoc = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
    expect(await refusal(validator.validate(plainDoc, nonce))).to.match(
      /^tpm-ek attestation document carries no EndorsementKeyCertificates/,
    )
    const bare = await startSwtpm()
    try {
      const err = await createTpmEkIssuer(bare.open)
        .issue(userData, nonce)
        .catch((e: unknown) => e)
      expect(err).to.be.instanceOf(CliError)
      expect((err as Error).message).to.equal(
        'the TPM has no EK certificate (RSA 2048, ECC P-256 or P-384); tpm-ek attestation needs one',
      )
      expect((err as CliError).hint).to.equal(
        'use a TPM provisioned with an EK certificate by its manufacturer (swtpm: swtpm_setup --create-ek-cert), or the qemu-vtpm attestation variant',
      )
    } finally {
      await bare.stop()
    }
  })

  it('issuing fails with the TPM error when an EK certificate cannot be read, not "no EK certificate"', async () => {
    const broken: OpenTpm = async () => ({
      send: () => Promise.reject(new Error('device gone')),
      close: async () => {},
    })
    const err = await createTpmEkIssuer(broken)
      .issue(userData, nonce)
      .catch((e: unknown) => e)
    expect(err).to.be.instanceOf(TpmError)
    expect((err as Error).message).to.match(/^reading the EK certificate at NV index 0x1c000/)
    expect(((err as Error).cause as Error).message).to.equal('device gone')
  })

  it('issuing refuses a TPM holding more intermediates than a document may carry', async () => {
    const tools = tpm2Tools(tpm, tmp.dir)
    const extra = ['0x01c00101', '0x01c00102', '0x01c00103']
    const size = String(intermediate.raw.length)
    try {
      for (const index of extra) {
        await tools('tpm2_nvdefine', [
          index,
          '-C',
          'o',
          '-s',
          size,
          '-a',
          'ownerread|ownerwrite|authread|authwrite',
        ])
        await tools('tpm2_nvwrite', [index, '-C', 'o', '-i', 'chain.der'])
      }
      // the EK certificate and four intermediates: one more than MAX_EK_CERTIFICATES (4)
      const err = await createTpmEkIssuer(tpm.open)
        .issue(userData, nonce)
        .catch((e: unknown) => e)
      expect(err).to.be.instanceOf(TpmParseError)
      expect((err as Error).message).to.equal(
        'EK certificate chain: the TPM holds more than 3 intermediate certificates',
      )
    } finally {
      for (const index of extra) await tools('tpm2_nvundefine', [index, '-C', 'o']).catch(() => undefined)
    }
  })

  it('aTLS refuses a tpm-ek peer whose activation has not happened (fail closed until the exchange is wired)', async () => {
    const certNonce = randomBytes(32)
    const cert = await createAttestedCertificate(issuer, certNonce)
    const err = await verifyAttestedCertificate(cert.der, [validator], certNonce).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(AttestationError)
    expect((err as Error).message).to.equal(
      "tpm-ek: the peer's attestation counts only after credential activation, which this connection does not perform",
    )
  })

  // last: the boot log extends PCRs that `m` holds for the tests above
  it('returns the replayed event log of a tpm-ek document that carries one', async () => {
    const logFile = path.join(tmp.dir, 'binary_bios_measurements')
    await writeFile(logFile, await measureBoot(tpm.open, BOOT))
    const doc = await createTpmEkIssuer(tpm.open, { eventLogPath: logFile }).issue(userData, nonce)
    const got = await createTpmEkValidator(new Map(), [root]).validate(doc, nonce)
    expect(got.eventLog?.bank).to.equal('SHA-256')
    expect(got.eventLog?.events).to.have.length(BOOT.length)
  })
})
