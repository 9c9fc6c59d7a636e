/**
 * PKCS#10 requests: ours are read back by OpenSSL, OpenSSL's are read by ours, and a request whose
 * signature does not verify (tampered subject, swapped key, another algorithm) is refused with why.
 */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { withTempDir } from '../support/temp.js'
import { runProcess } from '../../src/lib/system/process.js'
import { csrProblems, type CsrParser } from '../../src/lib/joinservice/csr-policy.js'
import { generateEcdsaP256KeyPair, generateRsaKeyPair, parseCsr } from '../../src/lib/x509/index.js'
import { createCsr, CsrError, type ParsedCsr } from '../../src/lib/x509/csr.js'

// The join service takes this parser as its CsrParser: a compile-time check that the shapes agree.
const joinServiceParser: CsrParser = parseCsr

async function run(file: string, args: string[]): Promise<string> {
  const res = await runProcess(file, args)
  if (res.code !== 0) throw new Error(`${file} ${args.join(' ')}: ${res.stderr}`)
  return res.stdout + res.stderr
}

interface OpensslRequest {
  newkey: string[]
  subj: string
  san?: string
  digest?: string
}

/** `openssl req -new` with a fresh key: the request's DER. */
function opensslCsr(opts: OpensslRequest): Promise<Buffer> {
  return withTempDir(async (dir) => {
    const out = path.join(dir, 'req.der')
    await run('openssl', [
      'req',
      '-new',
      ...opts.newkey,
      '-nodes',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-subj',
      opts.subj,
      ...(opts.san ? ['-addext', `subjectAltName=${opts.san}`] : []),
      ...(opts.digest ? [`-${opts.digest}`] : []),
      '-outform',
      'DER',
      '-out',
      out,
    ])
    return readFile(out)
  })
}

const P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']
const NODE_SUBJECT = '/O=system:nodes/CN=system:node:worker-1'

/** Replaces the first occurrence of `from` (same length as `to`): a change the signature does not cover. */
function replaceBytes(der: Buffer, from: Buffer, to: Buffer): Buffer {
  const at = der.indexOf(from)
  if (at < 0 || from.length !== to.length) throw new Error('test setup: bytes to replace not found')
  const out = Buffer.from(der)
  to.copy(out, at)
  return out
}

const spkiOf = (key: KeyObject) =>
  (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' })
const ECDSA_WITH_SHA256 = Buffer.from('06082a8648ce3d040302', 'hex')
const ECDSA_WITH_SHA384 = Buffer.from('06082a8648ce3d040303', 'hex')

describe('x509 CSR', () => {
  describe('createCsr: OpenSSL and parseCsr read the same request', () => {
    it('an ECDSA P-256 kubelet request: OpenSSL verifies it and sees our subject and SANs', async () => {
      const { privateKey } = await generateEcdsaP256KeyPair()
      const der = createCsr({
        key: privateKey,
        subject: [
          ['CN', 'system:node:worker-1'],
          ['O', 'system:nodes'],
        ],
        ipSans: ['10.0.0.5', 'fd00::5'],
        dnsSans: ['worker-1'],
      })
      const text = await withTempDir(async (dir) => {
        const file = path.join(dir, 'req.der')
        await writeFile(file, der)
        return run('openssl', ['req', '-inform', 'DER', '-in', file, '-noout', '-verify', '-text'])
      })
      expect(text).to.include('self-signature verify OK')
      expect(text).to.include('Subject: CN = system:node:worker-1, O = system:nodes')
      expect(text).to.match(/DNS:worker-1, IP Address:10\.0\.0\.5, IP Address:FD00:0:0:0:0:0:0:5/)
      const got = parseCsr(der)
      expect(got).to.deep.include({
        organizations: ['system:nodes'],
        commonNames: ['system:node:worker-1'],
        key: { type: 'ec', namedCurve: 'prime256v1' },
        dnsNames: ['worker-1'],
        ipAddresses: ['10.0.0.5', 'fd00::5'],
        signatureValid: true,
      })
      expect(got.publicKeyDer).to.deep.equal(spkiOf(privateKey))
    })

    it('an RSA request without SANs round-trips', () => {
      const { privateKey } = generateRsaKeyPair()
      expect(parseCsr(createCsr({ key: privateKey, subject: [['CN', 'admin']] }))).to.deep.include({
        organizations: [],
        commonNames: ['admin'],
        key: { type: 'rsa', modulusLength: 2048 },
        dnsNames: [],
        ipAddresses: [],
      })
    })

    it('refuses a key it cannot sign with', () => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' })
      expect(() => createCsr({ key: privateKey, subject: [['CN', 'x']] })).to.throw(
        /secp384r1.*not supported/,
      )
    })
  })

  describe('parseCsr reads what OpenSSL makes', () => {
    const cases: Record<string, { req: OpensslRequest; want: Partial<ParsedCsr> }> = {
      'ECDSA P-256, IP and DNS SANs': {
        req: { newkey: P256, subj: NODE_SUBJECT, san: 'IP:10.0.0.5,DNS:worker-1' },
        want: {
          organizations: ['system:nodes'],
          commonNames: ['system:node:worker-1'],
          key: { type: 'ec', namedCurve: 'prime256v1' },
          dnsNames: ['worker-1'],
          ipAddresses: ['10.0.0.5'],
        },
      },
      'an IPv6 SAN, compressed as text': {
        req: { newkey: P256, subj: NODE_SUBJECT, san: 'IP:2001:db8:0:0:0:0:0:1' },
        want: { ipAddresses: ['2001:db8::1'], dnsNames: [] },
      },
      'no SANs at all': {
        req: { newkey: P256, subj: NODE_SUBJECT },
        want: { dnsNames: [], ipAddresses: [] },
      },
      'every O and CN, in order (the policy decides what to make of them)': {
        req: { newkey: P256, subj: '/O=system:nodes/O=system:masters/CN=system:node:a/CN=b' },
        want: { organizations: ['system:nodes', 'system:masters'], commonNames: ['system:node:a', 'b'] },
      },
      'ECDSA P-384 with SHA-384: verified, reported as secp384r1': {
        req: {
          newkey: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384'],
          subj: NODE_SUBJECT,
          digest: 'sha384',
        },
        want: { key: { type: 'ec', namedCurve: 'secp384r1' } },
      },
      'RSA 2048 with SHA-256': {
        req: { newkey: ['-newkey', 'rsa:2048'], subj: NODE_SUBJECT },
        want: { key: { type: 'rsa', modulusLength: 2048 } },
      },
      'RSA 1024: verified and reported, for the policy to refuse': {
        req: { newkey: ['-newkey', 'rsa:1024'], subj: NODE_SUBJECT },
        want: { key: { type: 'rsa', modulusLength: 1024 } },
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const got = joinServiceParser(await opensslCsr(tc.req))
        expect(got).to.deep.include({ ...tc.want, signatureValid: true })
      })

    it("an honest node's request from OpenSSL passes the join service's policy", async () => {
      const csr = parseCsr(await opensslCsr({ newkey: P256, subj: NODE_SUBJECT, san: 'IP:10.0.0.5' }))
      expect(csrProblems(csr, { peerAddress: '10.0.0.5' })).to.deep.equal([])
    })
  })

  describe('parseCsr refuses, naming why', () => {
    const ecRequest = () => opensslCsr({ newkey: P256, subj: NODE_SUBJECT, san: 'IP:10.0.0.5' })
    const cases: Record<string, { der: () => Promise<Buffer>; want: RegExp }> = {
      'a tampered subject (another node name)': {
        der: async () => replaceBytes(await ecRequest(), Buffer.from('worker-1'), Buffer.from('worker-2')),
        want: /^signature \(ecdsa-with-SHA256\) does not verify with the request's own key$/,
      },
      'a tampered IP SAN': {
        der: async () =>
          replaceBytes(
            await ecRequest(),
            Buffer.from([0x87, 0x04, 10, 0, 0, 5]),
            Buffer.from([0x87, 0x04, 10, 0, 0, 6]),
          ),
        want: /signature \(ecdsa-with-SHA256\) does not verify/,
      },
      "another key put in place of the signer's": {
        der: async () => {
          const der = await ecRequest()
          const theirs = parseCsr(der).publicKeyDer
          const mine = spkiOf((await generateEcdsaP256KeyPair()).publicKey)
          return replaceBytes(der, theirs, mine)
        },
        want: /signature \(ecdsa-with-SHA256\) does not verify/,
      },
      'a P-256 point off the curve': {
        der: async () => {
          const der = await ecRequest()
          const spki = parseCsr(der).publicKeyDer
          const offCurve = Buffer.from(spki)
          offCurve.writeUInt8(offCurve.readUInt8(offCurve.length - 1) ^ 1, offCurve.length - 1) // y's last byte
          return replaceBytes(der, spki, offCurve)
        },
        want: /^public key \(algorithm 1\.2\.840\.10045\.2\.1\) cannot be read: /,
      },
      'the signature algorithm changed to another hash': {
        der: async () => replaceBytes(await ecRequest(), ECDSA_WITH_SHA256, ECDSA_WITH_SHA384),
        want: /signature \(ecdsa-with-SHA384\) does not verify/,
      },
      'SHA-1': {
        der: () => opensslCsr({ newkey: ['-newkey', 'rsa:2048'], subj: NODE_SUBJECT, digest: 'sha1' }),
        want: /^signature algorithm sha1WithRSAEncryption \(SHA-1\) is not accepted; use one of ecdsa-with-SHA256/,
      },
      Ed25519: {
        der: () => opensslCsr({ newkey: ['-newkey', 'ed25519'], subj: NODE_SUBJECT }),
        want: /^signature algorithm Ed25519 is not accepted/,
      },
      'an e-mail SAN beside the IP': {
        der: () => opensslCsr({ newkey: P256, subj: NODE_SUBJECT, san: 'IP:10.0.0.5,email:a@example.com' }),
        want: /^subjectAltName: rfc822Name names are not accepted; only DNS and IP$/,
      },
      'trailing bytes after the request': {
        der: async () => Buffer.concat([await ecRequest(), Buffer.from([0, 0])]),
        want: /^not a DER PKCS#10 request: 2 bytes follow the request's SEQUENCE$/,
      },
      'a truncated request': {
        der: async () => (await ecRequest()).subarray(0, 100),
        want: /^not a DER PKCS#10 request: /,
      },
      'PEM text instead of DER': {
        der: async () => Buffer.from('-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n'),
        want: /^not a DER PKCS#10 request: does not start with a SEQUENCE$/,
      },
      'a public key, not a request': {
        der: async () => spkiOf((await generateEcdsaP256KeyPair()).publicKey),
        want: /^not a DER PKCS#10 request: /,
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const der = await tc.der()
        let err: unknown
        try {
          parseCsr(der)
        } catch (e) {
          err = e
        }
        expect(err).to.be.instanceOf(CsrError)
        expect((err as Error).message).to.match(tc.want)
      })
  })
})
