/**
 * The confidential-VM variants end to end on a real swtpm: the issuer reads its hardware report
 * through the configfs-tsm client from the stand-in (TEST DOUBLE) AMD or Intel, the validator
 * checks the vTPM quote, the report under the pinned stand-in root, and the binding between them.
 * The attacks: a genuine report passed off beside a quote from a TPM outside the CVM, a changed
 * InstanceInfo, a root not pinned, a debug guest, a stale report.
 */
import { createHash, randomBytes, X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  AttestationError,
  createIssuer,
  createValidator,
  type CvmHardware,
  type CvmValidationPolicy,
  type Measurements,
} from '../../src/lib/attestation/index.js'
import { decodeDocument, encodeDocument } from '../../src/lib/attestation/document.js'
import { decodeSnpInstanceInfo, encodeSnpInstanceInfo } from '../../src/lib/attestation/cvm/instance-info.js'
import {
  createSnpStandIn,
  createTdxStandIn,
  produceSnpEvidence,
  produceTdxEvidence,
} from '../../src/lib/cvm-standin/index.js'
import { startConfigfsTsmStandIn, type ConfigfsTsmStandIn } from '../../src/lib/cvm-standin/configfs-tsm.js'
import { requestTsmReport } from '../../src/lib/tsm/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { EvidenceMismatchError } from '../../src/lib/attestation/errors.js'
import { measureBoot } from '../../src/lib/attestation/eventlog/write.js'
import { BOOT } from './eventlog/boot-log.js'
import { type SnpStandIn } from '../../src/lib/cvm-standin/snp.js'
import { type TdxStandIn } from '../../src/lib/cvm-standin/tdx.js'

const MEASUREMENT = createHash('sha384').update('cvm-variants test launch').digest()
const userData = Buffer.from('TLS key of the node')

async function measurementsOf(tpm: SwtpmHandle): Promise<Measurements> {
  const pcrs = await readPcrs(tpm.open, [4, 15])
  return new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
}

describe('confidential-VM variants on swtpm with the stand-in hardware', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let other: SwtpmHandle
  let tmp: TempDir
  let snpVcek: SnpStandIn
  let snpVlek: SnpStandIn
  let tdx: TdxStandIn
  const served: ConfigfsTsmStandIn[] = []

  before(async () => {
    ;[tpm, other, tmp, snpVcek, snpVlek, tdx] = await Promise.all([
      startSwtpm(),
      startSwtpm(),
      makeTempDir('constell-cvm-'),
      createSnpStandIn({ signer: 'VCEK' }),
      createSnpStandIn({ signer: 'VLEK' }),
      createTdxStandIn(),
    ])
  })
  after(async () => {
    await Promise.all(served.map((s) => s.stop()))
    await Promise.all([tpm.stop(), other.stop(), tmp.cleanup()])
  })

  /** The node's hardware: a configfs-tsm directory the stand-in serves, read by the production client. */
  async function hardware(
    kind: 'snp' | 'tdx',
    standIn: { snp?: SnpStandIn; tdx?: TdxStandIn; debug?: boolean },
  ): Promise<CvmHardware> {
    const dir = `${tmp.dir}/tsm-${randomBytes(4).toString('hex')}`
    const { mkdir } = await import('node:fs/promises')
    await mkdir(dir)
    const provider = kind === 'snp' ? 'sev_guest' : 'tdx_guest'
    const snp = standIn.snp
    const produce =
      kind === 'snp' && snp
        ? produceSnpEvidence({
            report: ({ reportData }) =>
              snp.report({
                reportData,
                measurement: MEASUREMENT,
                ...(standIn.debug && { policy: 0x20000n | (1n << 19n) }),
              }),
            certificateTable: () => snp.certificateTable(),
          })
        : produceTdxEvidence({
            quote: ({ reportData }) =>
              (standIn.tdx ?? tdx).quote({
                reportData,
                ...(standIn.debug && { tdAttributes: Buffer.from('0100000000000000', 'hex') }),
              }),
          })
    served.push(await startConfigfsTsmStandIn({ dir, provider, produce }))
    return { report: (reportData) => requestTsmReport({ root: dir, inblob: reportData, provider }) }
  }

  const snpPolicy = (s: SnpStandIn, over: Partial<CvmValidationPolicy> = {}): CvmValidationPolicy =>
    ({
      kind: 'snp',
      arks: [new X509Certificate(s.ark)],
      minimumTcb: s.tcb,
      launchMeasurement: MEASUREMENT,
      allowMigrationAgent: false,
      allowSmt: false,
      ...over,
    }) as CvmValidationPolicy
  const tdxPolicy = (over: Record<string, unknown> = {}): CvmValidationPolicy => ({
    kind: 'tdx',
    intelRoots: [new X509Certificate(tdx.rootPem)],
    minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
    ...over,
  })

  const cases = [
    { variant: 'aws-sev-snp', kind: 'snp', standIn: () => snpVlek },
    { variant: 'gcp-sev-snp', kind: 'snp', standIn: () => snpVcek },
    { variant: 'qemu-tdx', kind: 'tdx', standIn: () => undefined },
  ] as const

  for (const c of cases) {
    describe(c.variant, () => {
      const policy = () => (c.kind === 'snp' ? snpPolicy(c.standIn()) : tdxPolicy())
      const issuerOn = async (t: SwtpmHandle, debug = false) =>
        createIssuer(c.variant, t.open, {
          cvm: await hardware(c.kind, { snp: c.standIn(), debug }),
        })

      it('accepts a document from the node, naming the stand-in root as such', async () => {
        const nonce = randomBytes(32)
        const doc = await (await issuerOn(tpm)).issue(userData, nonce)
        const result = await createValidator(c.variant, await measurementsOf(tpm), undefined, {
          cvm: policy(),
        }).validate(doc, nonce)
        expect(result.userData).to.deep.equal(userData)
        expect(result.cvm?.kind).to.equal(c.kind)
        expect(result.cvm?.vendorRoot).to.equal(false)
        expect(result.cvm?.rootSubject).to.match(/STAND-IN/)
        expect(result.cvm?.rootSubject, 'one line').not.to.include('\n')
        expect(result.akName, "the AK's TPM name (SHA-256)").to.be.instanceOf(Buffer).with.length(34)
        expect(result, 'no event log in the document, none in the result').not.to.have.property('eventLog')
        const fields = result.cvm?.fields ?? {}
        if (c.kind === 'snp') {
          const s = c.standIn()
          expect(result.cvm?.rootSubject).to.equal(new X509Certificate(s.ark).subject.split('\n').join(', '))
          expect(Object.keys(fields)).to.deep.equal([
            'product',
            'signer',
            'reportVersion',
            'measurement',
            'reportedTcb',
            'policy',
            'reportData',
          ])
          expect(fields).to.include({
            product: 'Milan',
            signer: s.signer,
            measurement: MEASUREMENT.toString('hex'),
            reportedTcb: `bootloader ${s.tcb.bootloader}, tee ${s.tcb.tee}, snp ${s.tcb.snp}, microcode ${s.tcb.microcode}`,
            policy: '0x20000',
          })
          expect(fields.reportVersion).to.match(/^\d+$/)
          expect(fields.reportData).to.match(/^[0-9a-f]{128}$/)
          expect(result.warnings, 'a pinned measurement, the PCRs as expected').to.deep.equal([])
        } else {
          expect(result.cvm?.rootSubject).to.equal(
            new X509Certificate(tdx.rootPem).subject.split('\n').join(', '),
          )
          expect(Object.keys(fields)).to.deep.equal([
            'tcbStatus',
            'mrTd',
            'rtmr0',
            'rtmr1',
            'rtmr2',
            'rtmr3',
            'mrSeam',
            'tdAttributes',
            'xfam',
            'reportData',
          ])
          expect(fields.tcbStatus).to.equal('not evaluated')
          for (const k of ['mrTd', 'rtmr0', 'rtmr3', 'mrSeam']) expect(fields[k]).to.match(/^[0-9a-f]{96}$/)
          expect(fields.reportData).to.match(/^[0-9a-f]{128}$/)
          // the hardware's warnings reach the result: no collateral, a stand-in root
          expect(result.warnings).to.have.length(2)
          expect(result.warnings[0]).to.match(/^TCB status not evaluated/)
        }
      })

      it("checks the hardware evidence at the validator's clock: far ahead, a certificate has expired", async () => {
        const nonce = randomBytes(32)
        const doc = await (await issuerOn(tpm)).issue(userData, nonce)
        const later = new Date(Date.now() + 40 * 365 * 24 * 3600_000)
        const err = await createValidator(c.variant, await measurementsOf(tpm), undefined, {
          cvm: policy(),
          now: () => later,
        })
          .validate(doc, nonce)
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.match(c.kind === 'snp' ? /validity: .*found now / : /expired on /)
      })

      it('refuses to prove credential activation, before reading the document', async () => {
        const err = await createValidator(c.variant, new Map(), undefined, { cvm: policy() })
          .validate(Buffer.alloc(0), randomBytes(32), {} as never)
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.equal(
          `${c.variant} attestation cannot prove credential activation, which this verifier expects`,
        )
      })

      it("names the policy it needs: the other kind's policy is none", () => {
        const otherKind: CvmValidationPolicy = c.kind === 'snp' ? tdxPolicy() : snpPolicy(snpVcek)
        expect(() => createValidator(c.variant, new Map(), undefined, { cvm: otherKind })).to.throw(
          AttestationError,
          `${c.variant} validation needs its ${c.kind === 'snp' ? 'SEV-SNP' : 'TDX'} policy (pinned root and minimums) from the config; none was given`,
        )
      })

      it('refuses a genuine report beside a quote from a TPM outside the CVM', async () => {
        const nonce = randomBytes(32)
        const genuine = decodeDocument(await (await issuerOn(tpm)).issue(userData, nonce))
        // the outside TPM quotes over the genuine CVM's InstanceInfo: its quote verifies, its AK differs
        const { issueQuoteDocument } = await import('../../src/lib/attestation/vtpm-quote.js')
        const forged = await issueQuoteDocument(
          other.open,
          userData,
          nonce,
          {},
          {
            instanceInfo: async () => genuine.instanceInfo ?? Buffer.alloc(0),
          },
        )
        const err = await createValidator(c.variant, await measurementsOf(other), undefined, {
          cvm: policy(),
        })
          .validate(encodeDocument(forged), nonce)
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(EvidenceMismatchError)
        expect((err as EvidenceMismatchError).field).to.match(/REPORT_?DATA|REPORTDATA/i)
      })

      it('refuses a document whose InstanceInfo was changed after quoting', async () => {
        const nonce = randomBytes(32)
        const doc = decodeDocument(await (await issuerOn(tpm)).issue(userData, nonce))
        const info = Buffer.from(doc.instanceInfo ?? Buffer.alloc(0))
        info.writeUInt8(info.readUInt8(info.length - 3) ^ 1, info.length - 3)
        const err = await createValidator(c.variant, await measurementsOf(tpm), undefined, { cvm: policy() })
          .validate(encodeDocument({ ...doc, instanceInfo: info }), nonce)
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.match(/not bound to this nonce|InstanceInfo|malformed/)
      })

      it("refuses a report under a root the config does not pin (the vendor's own)", async () => {
        const nonce = randomBytes(32)
        const doc = await (await issuerOn(tpm)).issue(userData, nonce)
        const { AMD_ROOT_KEYS, INTEL_SGX_ROOT_CA } = await import('../../src/lib/attestation/vendor-roots.js')
        const vendors =
          c.kind === 'snp'
            ? snpPolicy(c.standIn(), { arks: [new X509Certificate(AMD_ROOT_KEYS.Milan)] })
            : tdxPolicy({ intelRoots: [new X509Certificate(INTEL_SGX_ROOT_CA)] })
        const err = await createValidator(c.variant, await measurementsOf(tpm), undefined, { cvm: vendors })
          .validate(doc, nonce)
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.match(/pinned|root|ARK/i)
      })

      it('refuses a debug guest', async () => {
        const nonce = randomBytes(32)
        const doc = await (await issuerOn(tpm, true)).issue(userData, nonce)
        const err = await createValidator(c.variant, await measurementsOf(tpm), undefined, { cvm: policy() })
          .validate(doc, nonce)
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(EvidenceMismatchError)
        expect((err as EvidenceMismatchError).field).to.match(/DEBUG/i)
      })

      it('refuses a replayed document (another nonce)', async () => {
        const doc = await (await issuerOn(tpm)).issue(userData, randomBytes(32))
        const err = await createValidator(c.variant, await measurementsOf(tpm), undefined, { cvm: policy() })
          .validate(doc, randomBytes(32))
          .catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.match(/not bound to this nonce/)
      })

      it('refuses to validate without a policy, and a qemu-vtpm document', async () => {
        expect(() => createValidator(c.variant, new Map(), undefined, {})).to.throw(
          AttestationError,
          /policy/,
        )
        const nonce = randomBytes(32)
        const plain = await createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce)
        const err = await createValidator(c.variant, await measurementsOf(tpm), undefined, { cvm: policy() })
          .validate(plain, nonce)
          .catch((e: unknown) => e)
        expect((err as Error).message).to.match(/carries no InstanceInfo/)
      })
    })
  }

  it('returns the replayed event log of a CVM document that carries one', async () => {
    // a TPM of its own: the boot log extends PCRs the other tests read
    const booted = await startSwtpm()
    try {
      const logFile = path.join(tmp.dir, 'binary_bios_measurements')
      await writeFile(logFile, await measureBoot(booted.open, BOOT))
      const nonce = randomBytes(32)
      const doc = await createIssuer('gcp-sev-snp', booted.open, {
        cvm: await hardware('snp', { snp: snpVcek }),
        eventLogPath: logFile,
      }).issue(userData, nonce)
      const result = await createValidator('gcp-sev-snp', await measurementsOf(booted), undefined, {
        cvm: snpPolicy(snpVcek),
      }).validate(doc, nonce)
      expect(result.eventLog?.bank).to.equal('SHA-256')
      expect(result.eventLog?.events).to.have.length(BOOT.length)
      expect(result.cvm?.kind).to.equal('snp')
    } finally {
      await booted.stop()
    }
  })

  it('aws-sev-snp refuses a VCEK-signed report: AWS signs with the VLEK', async () => {
    const nonce = randomBytes(32)
    const hw = await hardware('snp', { snp: snpVcek })
    const err = await createIssuer('aws-sev-snp', tpm.open, { cvm: hw })
      .issue(userData, nonce)
      .catch((e: unknown) => e)
    expect((err as Error).message).to.match(/holds no VLEK/)
  })

  it('an SNP InstanceInfo without its signer is refused, naming the VCEK', async () => {
    const nonce = randomBytes(32)
    const hw = await hardware('snp', { snp: snpVcek })
    const issued = decodeDocument(
      await createIssuer('gcp-sev-snp', tpm.open, { cvm: hw }).issue(userData, nonce),
    )
    const info = decodeSnpInstanceInfo(issued.instanceInfo ?? Buffer.alloc(0))
    const { issueQuoteDocument } = await import('../../src/lib/attestation/vtpm-quote.js')
    const stripped = await issueQuoteDocument(
      tpm.open,
      userData,
      nonce,
      {},
      {
        instanceInfo: async () => encodeSnpInstanceInfo({ ...info, reportSigner: Buffer.alloc(0) }),
      },
    )
    const err = await createValidator('gcp-sev-snp', await measurementsOf(tpm), undefined, {
      cvm: snpPolicy(snpVcek),
    })
      .validate(encodeDocument(stripped), nonce)
      .catch((e: unknown) => e)
    expect(err).to.be.instanceOf(AttestationError)
    expect((err as Error).message).to.match(/VCEK/)
  })
})
