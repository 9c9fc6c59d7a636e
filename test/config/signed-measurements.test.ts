import { execFileSync } from 'node:child_process'
import { chmodSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { expect } from '../support/chai.js'
import { freePort } from '../support/ports.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  hex,
  measurementsJson,
  opensslKeyPair,
  opensslSign,
  opensslVerifies,
  serveRoutes,
  type KeyPair,
} from '../support/signed-measurements.js'
import { planFetchedMeasurements } from '../../src/lib/config/fetch-measurements.js'
import { offerMeasurementsUpdate } from '../../src/lib/config/measurements-offer.js'
import { signedSource } from '../../src/lib/config/signed-measurements.js'
import { signMeasurementsFile } from '../../src/lib/measurements/sign.js'
import { MeasurementsRefusedError, type RefusalReason } from '../../src/lib/measurements/refusal.js'
import { httpGet } from '../../src/lib/system/http-get.js'

/** Hand-written: comments, a warn-only PCR 9, no PCR 12 (the signed file adds it). */
const CONFIG = `# my cluster
version: v4
name: constell
kubernetesVersion: v1.31.13
measurementsPublicKey: builder.pub # the image builder's key
attestation:
  qemuVTPM:
    measurements:
      "4":
        expected: "${hex(0)}"
        warnOnly: false
      # the kernel command line
      "9":
        expected: "${hex(0)}"
        warnOnly: true
      "15":
        expected: "${hex(0)}"
        warnOnly: false
`

const SIGNED = {
  4: [hex(0xa4), false],
  9: [hex(0xa9), false],
  12: [hex(0xac), false],
  15: [hex(0), false],
} as const

describe('signed measurements (sign, fetch, verify with openssl)', () => {
  let tmp: TempDir
  let builder: KeyPair
  let configFile: string
  let file: string
  beforeEach(async () => {
    tmp = await makeTempDir('constell-signm-')
    builder = opensslKeyPair(tmp.dir, 'builder')
    configFile = path.join(tmp.dir, 'constellation-conf.yaml')
    await writeFile(configFile, CONFIG)
    file = path.join(tmp.dir, 'measurements.json')
    await writeFile(file, measurementsJson('qemu-vtpm', SIGNED))
  })
  afterEach(() => tmp.cleanup())

  it('signs so that openssl dgst -sha256 -verify accepts it, and refuses to overwrite', async () => {
    const result = await signMeasurementsFile({ file, keyFile: builder.key })
    expect(result.output).to.equal(`${file}.sig`)
    const sig = await readFile(`${file}.sig`, 'utf8')
    expect(sig).to.equal(result.signature)
    expect(opensslVerifies(file, sig, builder.pub, tmp.dir)).to.equal(true)
    const other = opensslKeyPair(tmp.dir, 'other')
    expect(opensslVerifies(file, sig, other.pub, tmp.dir), 'negative control').to.equal(false)
    await expect(signMeasurementsFile({ file, keyFile: builder.key })).to.be.rejectedWith(/already exists/)
    expect(await readFile(`${file}.sig`, 'utf8')).to.equal(sig)
  })

  const badKeys: Record<string, { make: (dir: string) => string; want: RegExp }> = {
    'an encrypted key': {
      make: (dir) => reencrypt(opensslKeyPair(dir, 'enc').key, dir),
      want: /is an encrypted private key/,
    },
    'a P-384 key': {
      make: (dir) => opensslKeyPair(dir, 'p384', 'secp384r1').key,
      want: /secp384r1 private key, not ECDSA P-256/,
    },
    'a public key': {
      make: (dir) => opensslKeyPair(dir, 'pubonly').pub,
      want: /mode 0644|not a PEM private key/,
    },
  }
  for (const [name, tc] of Object.entries(badKeys))
    it(`sign refuses ${name}, writing nothing`, async () => {
      await expect(signMeasurementsFile({ file, keyFile: tc.make(tmp.dir) })).to.be.rejectedWith(tc.want)
      await expect(readFile(`${file}.sig`)).to.be.rejectedWith(/ENOENT/)
    })

  it("sign refuses a file that is not Constellation's measurements JSON", async () => {
    await writeFile(
      file,
      JSON.stringify({
        csp: 'QEMU',
        attestationVariant: 'qemu-vtpm',
        image: 'v1',
        measurements: { 4: { expected: 'zz', warnOnly: false } },
      }),
    )
    await expect(signMeasurementsFile({ file, keyFile: builder.key })).to.be.rejectedWith(
      /measurements\.4\.expected must be 32 or 48 bytes/,
    )
  })

  it('fetches over HTTP a file signed by openssl, then writes it keeping comments and warnOnly', async () => {
    const server = await serveRoutes({
      '/m.json': await readFile(file),
      '/m.json.sig': opensslSign(file, builder.key),
    })
    try {
      const plan = await planFetchedMeasurements(
        { configFile, url: `${server.base}/m.json`, cwd: tmp.dir },
        httpGet,
      )
      expect(
        plan.pcrs.map((u) => [
          u.index,
          u.current === null ? 'add' : 'update',
          u.next.slice(0, 2),
          u.warnOnly,
        ]),
      ).to.deep.equal([
        [4, 'update', 'a4', false],
        [9, 'update', 'a9', true], // the operator's warnOnly stays
        [12, 'add', 'ac', false],
        [15, 'update', '00', false],
      ])
      const log: string[] = []
      const io = {
        log: (t: string) => log.push(t),
        confirm: () => Promise.reject(new Error('asked')),
        yes: true,
      }
      const written = await offerMeasurementsUpdate(
        plan.config,
        plan.pcrs,
        { source: signedSource(plan.url, plan.image, plan.variant), notes: plan.notes, during: 'x' },
        io,
      )
      expect(written).to.equal(true)
      const text = await readFile(configFile, 'utf8')
      expect(text).to.contain('# the kernel command line').and.contain("# the image builder's key")
      expect(text).to.contain(`"9":\n        expected: "${hex(0xa9)}"\n        warnOnly: true`)
      expect(text).to.contain(`"12":\n        expected: "${hex(0xac)}"\n        warnOnly: false\n      "15":`)
      expect(log.join('\n'))
        .to.contain('signature verified')
        .and.contain('warnOnly stays as the config has it for PCR 9')
    } finally {
      await server.close()
    }
  })

  it('reads file:// URLs (air gaps) with --public-key instead of the pinned key', async () => {
    await writeFile(`${file}.sig`, opensslSign(file, builder.key))
    await writeFile(configFile, CONFIG.replace(/^measurementsPublicKey.*\n/m, ''))
    const url = pathToFileURL(file).href
    const plan = await planFetchedMeasurements(
      { configFile, url, cwd: tmp.dir, publicKeyFile: 'builder.pub' },
      httpGet,
    )
    expect(plan.publicKey.source).to.equal(path.join(tmp.dir, 'builder.pub'))
    expect(plan.pcrs).to.have.length(4)
  })

  interface Case {
    routes: (m: Buffer, sig: string) => Record<string, string | Buffer | ((res: ServerResponse) => void)>
    reason: RefusalReason
    want: RegExp
    /** The measurements file to sign and serve, instead of the good one. */
    doc?: () => string
    url?: string
  }
  const refusals: Record<string, Case> = {
    'a tampered file': {
      routes: (m, sig) => ({
        '/m.json': Buffer.from(m.toString().replace('a4a4', 'a4a5')),
        '/m.json.sig': sig,
      }),
      reason: 'signature',
      want: /signature does not match/,
    },
    'a tampered signature': {
      routes: (m, sig) => ({ '/m.json': m, '/m.json.sig': flipBase64(sig) }),
      reason: 'signature',
      want: /signature does not match|not a base64/,
    },
    'a signature by another key': {
      routes: (m) => ({
        '/m.json': m,
        '/m.json.sig': opensslSign(file, opensslKeyPair(tmp.dir, 'mallory').key),
      }),
      reason: 'signature',
      want: /signature does not match/,
    },
    'measurements of another variant': {
      doc: () => measurementsJson('aws-sev-snp', SIGNED),
      routes: (m, sig) => ({ '/m.json': m, '/m.json.sig': sig }),
      reason: 'variant',
      want: /has measurements for aws-sev-snp, not for this workspace's variant qemu-vtpm/,
    },
    'a slow server': {
      routes: (m, sig) => ({
        '/m.json': (res) => void res.writeHead(200).write(m.subarray(0, 10)),
        '/m.json.sig': sig,
      }),
      reason: 'timeout',
      want: /no data from the server|not finished within/,
    },
    'an oversized answer': {
      routes: (_m, sig) => ({ '/m.json': Buffer.alloc(2 * 1024 * 1024, 0x20), '/m.json.sig': sig }),
      reason: 'too-large',
      want: /over the limit/,
    },
    'a 404': { routes: (m) => ({ '/m.json': m }), reason: 'download', want: /answered HTTP 404/ },
    'an unreachable port': { routes: () => ({}), reason: 'unreachable', want: /ECONNREFUSED/, url: 'closed' },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses ${name}, naming why, with the config byte-identical`, async () => {
      if (tc.doc) await writeFile(file, tc.doc())
      const routes = tc.routes(await readFile(file), opensslSign(file, builder.key))
      const server = await serveRoutes(routes)
      const url =
        tc.url === 'closed' ? `http://127.0.0.1:${await freePort()}/m.json` : `${server.base}/m.json`
      try {
        const err: unknown = await planFetchedMeasurements(
          { configFile, url, cwd: tmp.dir, limits: { idleTimeoutMs: 300, totalTimeoutMs: 2_000 } },
          httpGet,
        ).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(MeasurementsRefusedError)
        expect((err as MeasurementsRefusedError).reason).to.equal(tc.reason)
        expect((err as Error).message).to.match(tc.want)
        expect(await readFile(configFile, 'utf8')).to.equal(CONFIG)
      } finally {
        await server.close()
      }
    })
})

function flipBase64(sig: string): string {
  const der = Buffer.from(sig, 'base64')
  der[der.length - 1] = (der[der.length - 1] ?? 0) ^ 1
  return der.toString('base64')
}

/** The same key as encrypted PKCS#8, as `openssl pkcs8 -topk8` writes it with a passphrase. */
function reencrypt(key: string, dir: string): string {
  const out = path.join(dir, 'enc.pem')
  execFileSync('openssl', ['pkcs8', '-topk8', '-in', key, '-out', out, '-passout', 'pass:secret'], {
    stdio: 'pipe',
  })
  chmodSync(out, 0o600)
  return out
}
