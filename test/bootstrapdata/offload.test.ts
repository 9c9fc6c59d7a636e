import { createHash, randomUUID } from 'node:crypto'
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import { CliError } from '../../src/lib/errors/index.js'
import { readFile, readdir } from 'node:fs/promises'
import { expect } from '../support/chai.js'
import { S3RVER_CREDENTIALS, S3Server } from '../support/s3-server.js'
import { createS3Store, generateBootstrapData, type OutputFormat } from '../../src/lib/bootstrapdata/index.js'
import {
  fixtureText,
  tempWorkspace,
  testDeps,
  testOptions,
  validateIgnition,
  validateUserData,
} from './helpers.js'

describe('bootstrap data offload to an S3-compatible store (local s3rver process)', function () {
  this.timeout(60_000)
  let s3: S3Server
  let ws: { dir: string; cleanup: () => Promise<void> }
  before(async () => (s3 = await new S3Server().start(['userdata'])))
  after(async () => s3.stop())
  beforeEach(async () => (ws = await tempWorkspace()))
  afterEach(async () => ws.cleanup())

  const store = () => createS3Store({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS })

  const formats: OutputFormat[] = ['cloud-config', 'ignition']
  for (const format of formats) {
    it(`${format}: data above the limit becomes a stub that points at the full document`, async () => {
      const result = await generateBootstrapData(
        testOptions(ws.dir, {
          machine: 'cp-0',
          format,
          upload: 's3://userdata/demo',
          maxUserDataBytes: 8192,
          presignedUrlSeconds: 3600, // the s3:// default is covered by offload-private.test.ts
        }),
        await testDeps(await fixtureText(), { objectStore: store }),
      )
      const entry = result.machines[0]
      const stub = await readFile(entry?.file as string, 'utf8')
      expect(entry?.offload?.object).to.equal(
        `s3://userdata/demo/cp-0.${format === 'ignition' ? 'ign' : 'cloud-config'}`,
      )
      expect(entry?.offload?.stubBytes).to.equal(Buffer.byteLength(stub)).and.to.be.below(2048)

      let url: string
      if (format === 'ignition') {
        await validateIgnition(stub)
        const replace = (
          JSON.parse(stub) as {
            ignition: { config: { replace: { source: string; verification: { hash: string } } } }
          }
        ).ignition.config.replace
        url = replace.source
        const full = await fetchText(url)
        expect(replace.verification.hash).to.equal(
          `sha512-${createHash('sha512').update(full).digest('hex')}`,
        )
      } else {
        const lines = stub.trimEnd().split('\n')
        expect(lines[0]).to.equal('#include')
        url = lines[1] as string
      }
      expect(url)
        .to.match(new RegExp(`^${s3.endpoint}/userdata/demo/cp-0\\.`))
        .and.to.contain('X-Amz-Signature=')
      const full = await fetchText(url)
      expect(Buffer.byteLength(full)).to.equal(entry?.bytes).and.to.be.above(8192)
      expect(full).to.contain(format === 'ignition' ? '"name":"kubeadm.service"' : 'kubeadm init')
      await validateUserData(full)
      // the presigned URL is a bearer credential for the data, so the result names only the object
      expect(JSON.stringify(result)).not.to.contain('X-Amz-Signature')
    })
  }

  it('small data is uploaded too when --upload is given (privacy, not size)', async () => {
    const result = await generateBootstrapData(
      testOptions(ws.dir, { machine: 'worker-0', upload: 's3://userdata', presignedUrlSeconds: 3600 }),
      await testDeps(await fixtureText(true), { objectStore: store }),
    )
    const stub = await readFile(result.machines[0]?.file as string, 'utf8')
    const full = await fetchText(stub.split('\n')[1] as string)
    expect(full).to.contain('kubeadm join')
    expect(result.machines[0]?.offload?.object).to.equal('s3://userdata/worker-0.cloud-config')
  })

  it('data above the limit without --upload is an error, and nothing is written', async () => {
    const run = generateBootstrapData(
      testOptions(ws.dir, { format: 'ignition', maxUserDataBytes: 8192 }),
      await testDeps(await fixtureText(true)),
    )
    await expect(run).to.be.rejectedWith(/user data for Machine "cp-0" is \d+ bytes, above the limit of 8192/)
    expect(await readdir(ws.dir)).to.deep.equal(['pki']) // no output dir, no token Secret
  })

  it('a bucket that does not exist is reported with the object and endpoint', async () => {
    const run = generateBootstrapData(
      testOptions(ws.dir, { machine: 'worker-0', upload: 's3://nobucket/x' }),
      await testDeps(await fixtureText(true), { objectStore: store }),
    )
    await expect(run).to.be.rejectedWith(
      new RegExp(`uploading s3://nobucket/x/worker-0.cloud-config at ${s3.endpoint}`),
    )
    expect(await readdir(ws.dir)).to.deep.equal(['pki']) // the stub and token Secret were removed again
  })

  it('a failure after the uploads (token registration refused) removes the uploads and the files', async () => {
    const prefix = `rollback-${randomUUID()}`
    const run = generateBootstrapData(
      testOptions(ws.dir, { upload: `s3://userdata/${prefix}`, workloadKubeconfig: 'workload.kubeconfig' }),
      await testDeps(await fixtureText(true), {
        objectStore: store,
        registerToken: async () => {
          throw new CliError('registering bootstrap token Secret: HTTP 403')
        },
      }),
    )
    const err = await run.then(
      () => undefined,
      (e: unknown) => e as CliError,
    )
    expect(err?.message).to.equal('registering bootstrap token Secret: HTTP 403')
    expect(err?.hint).to.equal('removed the files and uploads this run had written')
    expect(await readdir(ws.dir)).to.deep.equal(['pki'])
    const client = new S3Client({
      endpoint: s3.endpoint,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: S3RVER_CREDENTIALS,
    })
    try {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: 'userdata', Prefix: prefix }))
      expect(listed.Contents ?? []).to.deep.equal([])
    } finally {
      client.destroy()
    }
  })
})

async function fetchText(url: string): Promise<string> {
  const res = await fetch(url)
  expect(res.status, url).to.equal(200)
  return res.text()
}
