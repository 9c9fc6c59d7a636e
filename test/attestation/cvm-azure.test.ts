/**
 * Azure's CVM variants end to end on a real swtpm set up as Azure's firmware (the HCL) leaves a vTPM:
 * its RSA attestation key persistent at 0x81000003 (tpm2-tools), its HCL report in NV index
 * 0x01400001, and IMDS (a local HTTP TEST DOUBLE) serving the VCEK and turning TD reports into
 * quotes from the stand-in Intel. The node's wiring reads them; the validator checks the binding:
 * REPORT_DATA commits to the runtime data, which names the AK that quoted.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes, X509Certificate, generateKeyPairSync } from 'node:crypto'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { tpm2Tools } from '../tpm/tpm2-tools.js'
import {
  AttestationError,
  azure,
  azureImds,
  createIssuer,
  createValidator,
  tdx,
  type CvmHardware,
  type CvmValidationPolicy,
} from '../../src/lib/attestation/index.js'
import { createSnpStandIn, createTdxStandIn } from '../../src/lib/cvm-standin/index.js'
import { publicKeyOf, parsePublic, readNvIndex, readPublicArea, withTpm } from '../../src/lib/tpm/index.js'
import { AZURE_HCL_REPORT_NV_INDEX } from '../../src/wiring/cvm-hardware.js'
import { AZURE_HCL_AK_HANDLE } from '../../src/lib/attestation/cvm/issuer.js'
import { EvidenceMismatchError } from '../../src/lib/attestation/errors.js'
import { decodeDocument, encodeDocument } from '../../src/lib/attestation/document.js'
import {
  decodeSnpInstanceInfo,
  decodeTdxInstanceInfo,
  encodeSnpInstanceInfo,
  encodeTdxInstanceInfo,
} from '../../src/lib/attestation/cvm/instance-info.js'
import { issueQuoteDocument } from '../../src/lib/attestation/vtpm-quote.js'
import { type SnpStandIn } from '../../src/lib/cvm-standin/snp.js'
import { type TdxStandIn } from '../../src/lib/cvm-standin/tdx.js'
import { writeNvIndex } from '../../src/lib/tpm/nv-index.js'

const userData = Buffer.from('TLS key of the node')

/** The HCL's runtime data: a JSON document whose keys list the HCL's attestation key (RSA JWK). */
function runtimeDataFor(key: { n?: string; e?: string }): Buffer {
  return Buffer.from(
    JSON.stringify({
      keys: [{ kid: 'HCLAkPub', key_ops: ['sign'], kty: 'RSA', e: key.e, n: key.n }],
      'vm-configuration': { 'secure-boot': true, 'tpm-enabled': true },
    }),
  )
}

describe('Azure CVM variants: HCL report in the vTPM, IMDS stand-in', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let tmp: TempDir
  let snp: SnpStandIn
  let intel: TdxStandIn
  let imds: Server
  let imdsUrl: string
  let akJwk: { n?: string; e?: string }

  before(async () => {
    ;[tpm, tmp, snp, intel] = await Promise.all([
      startSwtpm(),
      makeTempDir('constell-azure-'),
      createSnpStandIn({ signer: 'VCEK' }),
      createTdxStandIn(),
    ])
    const tools = tpm2Tools(tpm, tmp.dir)
    await tools('tpm2_createprimary', [
      '-C',
      'e',
      '-G',
      'rsa2048:rsassa-sha256:null',
      '-a',
      'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|restricted|sign|noda',
      '-c',
      'hcl-ak.ctx',
    ])
    await tools('tpm2_evictcontrol', ['-C', 'o', '-c', 'hcl-ak.ctx', `0x${AZURE_HCL_AK_HANDLE.toString(16)}`])
    await tools('tpm2_flushcontext', ['-t'])
    const akPub = await withTpm(tpm.open, (t) => readPublicArea(t, AZURE_HCL_AK_HANDLE))
    akJwk = publicKeyOf(parsePublic(akPub)).export({ format: 'jwk' })
    imds = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json')
        if (req.headers.metadata !== 'true') return res.writeHead(400).end('{}')
        if (req.url === '/metadata/THIM/amd/certification')
          return res.end(JSON.stringify({ vcekCert: snp.signerCert, certificateChain: snp.ask + snp.ark }))
        if (req.url === '/acc/tdquote' && req.method === 'POST') {
          const { report } = JSON.parse(Buffer.concat(chunks).toString()) as { report: string }
          const quote = intel.quoteFromTdReport(Buffer.from(report, 'base64url'))
          return res.end(JSON.stringify({ quote: quote.toString('base64url') }))
        }
        res.writeHead(404).end('{}')
      })
    })
    await new Promise<void>((resolve) => imds.listen(0, '127.0.0.1', resolve))
    imdsUrl = `http://127.0.0.1:${(imds.address() as AddressInfo).port}`
  })
  after(async () => {
    await new Promise((resolve) => imds.close(resolve))
    await Promise.all([tpm.stop(), tmp.cleanup()])
  })

  /** What Azure's firmware does at boot: a hardware report bound to the runtime data, kept in NV. */
  async function bootFirmware(kind: 'snp' | 'tdx', runtimeData: Buffer, opts: { bindTo?: Buffer } = {}) {
    const reportData = azure.hclReportData(opts.bindTo ?? runtimeData)
    const hardwareReport =
      kind === 'snp'
        ? snp.report({ reportData })
        : tdx.encodeTdReport({ reportData, mrTd: Buffer.alloc(48, 7) })
    await withTpm(tpm.open, (t) =>
      writeNvIndex(
        t,
        AZURE_HCL_REPORT_NV_INDEX,
        azure.encodeHclReport({ kind, hardwareReport, runtimeData }),
      ),
    )
  }

  const hardware = (): CvmHardware => {
    const api = azureImds(imdsUrl)
    return {
      report: () => Promise.reject(new Error('Azure CVMs report through the HCL, not configfs-tsm')),
      hclReport: () => withTpm(tpm.open, (t) => readNvIndex(t, AZURE_HCL_REPORT_NV_INDEX)),
      vcek: () => api.vcek(),
      tdQuote: (r) => api.tdQuote(r),
    }
  }
  const policies: Record<'snp' | 'tdx', () => CvmValidationPolicy> = {
    snp: () => ({
      kind: 'snp',
      arks: [new X509Certificate(snp.ark)],
      minimumTcb: snp.tcb,
      allowMigrationAgent: false,
      allowSmt: false,
    }),
    tdx: () => ({
      kind: 'tdx',
      intelRoots: [new X509Certificate(intel.rootPem)],
      minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
      mrTd: Buffer.alloc(48, 7),
    }),
  }

  for (const [variant, kind] of [
    ['azure-sev-snp', 'snp'],
    ['azure-tdx', 'tdx'],
  ] as const) {
    describe(variant, () => {
      const validate = (doc: Buffer, nonce: Buffer) =>
        createValidator(variant, new Map(), undefined, { cvm: policies[kind]() }).validate(doc, nonce)

      it('issues with the HCL key and validates: the runtime data names the AK that quoted', async () => {
        await bootFirmware(kind, runtimeDataFor(akJwk))
        const nonce = randomBytes(32)
        const doc = await createIssuer(variant, tpm.open, { cvm: hardware() }).issue(userData, nonce)
        const result = await validate(doc, nonce)
        expect(result.cvm?.kind).to.equal(kind)
        expect(result.cvm?.vendorRoot).to.equal(false)
      })

      it('refuses when the HCL names another attestation key than the one that quoted', async () => {
        const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
          format: 'jwk',
        })
        await bootFirmware(kind, runtimeDataFor(stranger))
        const nonce = randomBytes(32)
        const doc = await createIssuer(variant, tpm.open, { cvm: hardware() }).issue(userData, nonce)
        const err = await validate(doc, nonce).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.match(/names another attestation key/)
      })

      it('refuses an InstanceInfo without the HCL runtime data, naming the field', async () => {
        await bootFirmware(kind, runtimeDataFor(akJwk))
        const nonce = randomBytes(32)
        const issued = decodeDocument(
          await createIssuer(variant, tpm.open, { cvm: hardware() }).issue(userData, nonce),
        )
        const info = issued.instanceInfo ?? Buffer.alloc(0)
        let stripped: Buffer
        if (kind === 'snp') {
          const { azureRuntimeData: _, ...rest } = decodeSnpInstanceInfo(info)
          stripped = encodeSnpInstanceInfo(rest)
        } else {
          const { runtimeData: _, ...rest } = decodeTdxInstanceInfo(info)
          stripped = encodeTdxInstanceInfo(rest)
        }
        // quoted again over the stripped InstanceInfo: only the missing runtime data is wrong
        const doc = await issueQuoteDocument(
          tpm.open,
          userData,
          nonce,
          {},
          { instanceInfo: async () => stripped },
        )
        const err = await validate(encodeDocument(doc), nonce).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(AttestationError)
        expect((err as Error).message).to.equal(
          kind === 'snp'
            ? 'azure-sev-snp: InstanceInfo.Azure.RuntimeData (the HCL runtime data) is missing'
            : 'azure-tdx: InstanceInfo.RuntimeData (the HCL runtime data) is missing',
        )
      })

      it('refuses runtime data the hardware report does not commit to', async () => {
        await bootFirmware(kind, runtimeDataFor(akJwk), { bindTo: Buffer.from('other runtime data') })
        const nonce = randomBytes(32)
        const doc = await createIssuer(variant, tpm.open, { cvm: hardware() }).issue(userData, nonce)
        const err = await validate(doc, nonce).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(EvidenceMismatchError)
        expect((err as EvidenceMismatchError).field).to.match(/REPORT_?DATA|REPORTDATA/i)
      })
    })
  }

  it('an issuer without IMDS says what it lacks', async () => {
    await bootFirmware('snp', runtimeDataFor(akJwk))
    const hw = hardware()
    delete hw.vcek
    const err = await createIssuer('azure-sev-snp', tpm.open, { cvm: hw })
      .issue(userData, randomBytes(32))
      .catch((e: unknown) => e)
    expect((err as Error).message).to.match(/needs the VCEK/)
  })
})
