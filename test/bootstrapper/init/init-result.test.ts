/**
 * The parts a resume rests on: the keys the init server attested (one resume each, for a minute),
 * the answer kept on the state disk, and a rebooted node that serves a kept answer before anything
 * else on port 9000.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { credentials, ServerCredentials, status } from '@grpc/grpc-js'
import { APIClient, InitRequest } from '../../../src/gen/init.js'
import type { Issuer } from '../../../src/lib/attestation/index.js'
import {
  AttestedKeys,
  Bootstrapper,
  InitResultKeeper,
  LogCollector,
  NodeLock,
  recordingIssuer,
} from '../../../src/lib/bootstrapper/index.js'
import { type InitAnswer } from '../../../src/lib/bootstrapper/init/init-result.js'
import type { BootstrapperSettings } from '../../../src/lib/bootstrapper/daemon.js'
import { CliError } from '../../../src/lib/errors/index.js'
import {
  clusterKmsUri,
  deriveResumeKey,
  hashInitSecret,
  resumeProof,
  resumeProofMatches,
} from '../../../src/lib/kms/index.js'
import { nodePaths } from '../../../src/lib/paths.js'

import { silentLogger } from '../../../src/lib/system/logger.js'
import { expect } from '../../support/chai.js'
import { callInit } from '../../support/init-client.js'
import { makeTempDir, withTempDir } from '../../support/temp.js'

const key = (n: number) => Buffer.alloc(32, n)

describe('AttestedKeys: what a resume proof may be bound to', () => {
  it('a key attested lately is good for one resume', () => {
    const keys = new AttestedKeys()
    keys.record(key(1))
    expect(keys.take(key(2)), 'never attested').to.equal(false)
    expect(keys.take(key(1))).to.equal(true)
    expect(keys.take(key(1)), 'used already').to.equal(false)
  })

  it('forgets keys after the TTL and beyond the cap, oldest first', () => {
    let now = 0
    const keys = new AttestedKeys(() => now, { ttlMs: 1_000, max: 3 })
    keys.record(key(1))
    now = 1_001
    keys.record(key(2))
    expect(keys.take(key(1)), 'older than the TTL').to.equal(false)
    for (const n of [3, 4, 5]) keys.record(key(n))
    expect(keys.size).to.equal(3)
    expect(keys.take(key(2)), 'pushed out by newer ones').to.equal(false)
    expect(keys.take(key(5))).to.equal(true)
  })

  it('recordingIssuer notes each key it attests and passes everything else through', async () => {
    const spyIssued: Buffer[] = []
    const inner: Issuer = {
      variant: 'tpm-ek',
      oid: '1.2.3',
      issue: (userData) => Promise.resolve(Buffer.from(`doc for ${spyIssued.push(userData)}`)),
      activate: () => Promise.resolve(Buffer.from('secret')),
    }
    const keys = new AttestedKeys()
    const issuer = recordingIssuer(inner, keys)
    expect(await issuer.issue(key(7), key(8))).to.deep.equal(Buffer.from('doc for 1'))
    expect(keys.take(key(7))).to.equal(true)
    expect(
      await issuer.activate?.({ credentialBlob: Buffer.alloc(1), encryptedSecret: Buffer.alloc(1) }),
    ).to.deep.equal(Buffer.from('secret'))
    expect(issuer.activationRequest).to.equal(undefined)
    expect(issuer).to.include({ variant: 'tpm-ek', oid: '1.2.3' })
  })
})

describe('resume proofs', () => {
  const master = { key: key(1), salt: key(2) }
  it('match only the master secret they were made with, over the key they name', () => {
    const proof = resumeProof(deriveResumeKey(master), key(9))
    expect(proof).to.have.length(64)
    expect(resumeProofMatches(deriveResumeKey(master), proof)).to.equal(true)
    expect(resumeProofMatches(deriveResumeKey({ ...master, key: key(3) }), proof)).to.equal(false)
    const other = Buffer.from(proof)
    other.set(key(10), 0) // the same MAC claimed for another handshake's key
    expect(resumeProofMatches(deriveResumeKey(master), other)).to.equal(false)
    expect(resumeProofMatches(deriveResumeKey(master), proof.subarray(0, 63))).to.equal(false)
  })
})

const answer: InitAnswer = {
  kubeconfig: Buffer.from('apiVersion: v1\nkind: Config\n'),
  clusterId: key(4),
  ownerId: Buffer.alloc(0),
  resumeKey: deriveResumeKey({ key: key(1), salt: key(2) }),
}

/** A file at the kept answer's place that the bootstrapper did not write. */
async function plant(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true })
  await writeFile(file, text)
}

describe('InitResultKeeper: the answer kept on the state disk', () => {
  it('nothing kept: nothing to restore', () =>
    withTempDir(async (dir) => expect(await InitResultKeeper.restore(nodePaths(dir))).to.equal(undefined)))

  it('a kept answer is restored as it was, ready for a resume', () =>
    withTempDir(async (dir) => {
      const keeper = new InitResultKeeper(nodePaths(dir))
      keeper.begin(answer.resumeKey)
      keeper.succeed(answer)
      await keeper.keep(answer)
      const restored = await InitResultKeeper.restore(nodePaths(dir))
      expect(restored?.state).to.equal('pending')
      expect(restored?.resumeKey).to.deep.equal(answer.resumeKey)
      expect(await restored?.settled()).to.deep.equal({ ok: true, answer })
    }))

  it('keeps at most once, and never over a file that is there', () =>
    withTempDir(async (dir) => {
      const paths = nodePaths(dir)
      await plant(paths.initResultFile, 'planted')
      const keeper = new InitResultKeeper(paths)
      keeper.begin(answer.resumeKey)
      keeper.succeed(answer)
      await expect(keeper.keep(answer)).to.be.rejectedWith(/already exists/)
      expect(await readFile(paths.initResultFile, 'utf8')).to.equal('planted')
    }))

  const malformed: Record<string, { text: string; says: RegExp }> = {
    'not JSON': { text: '{', says: /not JSON/ },
    'a short resume key': {
      text: JSON.stringify({
        kubeconfig: 'YQ==',
        clusterId: '04'.repeat(32),
        ownerId: '',
        resumeKey: 'YQ==',
      }),
      says: /resumeKey is not 32 base64 bytes/,
    },
    'no cluster ID': {
      text: JSON.stringify({ kubeconfig: 'YQ==', ownerId: '', resumeKey: key(1).toString('base64') }),
      says: /clusterId is not 32 hex bytes/,
    },
  }
  for (const [name, tc] of Object.entries(malformed))
    it(`${name}: refused, naming the file and the field`, () =>
      withTempDir(async (dir) => {
        const paths = nodePaths(dir)
        await plant(paths.initResultFile, tc.text)
        const err = await InitResultKeeper.restore(paths).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(CliError)
        expect((err as Error).message)
          .to.include(paths.initResultFile)
          .and.match(tc.says)
      }))
})

describe('a rebooted node with a kept answer serves resumes only', function () {
  this.timeout(10_000)
  const secret = Buffer.from('init-secret-0123456789abcdef0123')
  let cleanup: () => Promise<void> = () => Promise.resolve()
  afterEach(() => cleanup())

  it('PCR 15 set: no Init, no join; a proven resume gets the answer and the daemon is done', async () => {
    const tmp = await makeTempDir()
    const settings: BootstrapperSettings = {
      initServer: { listen: '127.0.0.1:0' },
      initSecretHash: await hashInitSecret(secret, 4),
      stateDisk: { device: '/dev/stub-state-disk' },
      metadata: {
        provider: 'static',
        self: { name: 'cp_0', role: 'control-plane', vpcIP: '127.0.0.1' },
        peers: [],
      },
    }
    const paths = nodePaths(tmp.dir)
    const first = new InitResultKeeper(paths)
    first.begin(answer.resumeKey)
    first.succeed(answer)
    await first.keep(answer)
    const kept = await InitResultKeeper.restore(paths)
    const attestedKeys = new AttestedKeys()
    const spyTouched: string[] = []
    const daemon = new Bootstrapper(settings, {
      paths,
      readClusterIdPcr: () => Promise.resolve(key(15)),
      lock: new NodeLock({ extendPcr: () => Promise.resolve(void spyTouched.push('lock')) }),
      disk: {
        uuid: () => {
          spyTouched.push('disk')
          return Promise.resolve('uuid')
        },
        changeKey: () => Promise.resolve(void spyTouched.push('changeKey')),
        writeMark: () => Promise.resolve(void spyTouched.push('mark')),
      },
      installer: () => Promise.reject(new Error('no install on a rebooted node')),
      kubeadm: () => Promise.reject(new Error('no kubeadm on a rebooted node')),
      logs: new LogCollector(),
      log: silentLogger,
      credentials: ServerCredentials.createInsecure(),
      attestedKeys,
      kept,
    })
    const address = await daemon.start()
    const client = new APIClient(address, credentials.createInsecure(), { 'grpc.enable_retries': 0 })
    cleanup = async () => {
      client.close()
      await daemon.stop(100)
      await tmp.cleanup()
    }
    const full = await callInit(
      client,
      InitRequest.fromPartial({ kmsUri: clusterKmsUri({ key: key(1), salt: key(2) }), initSecret: secret }),
    )
    expect(full.code).to.equal(status.FAILED_PRECONDITION)
    attestedKeys.record(key(30)) // the key of the resume's handshake
    const resumed = await callInit(
      client,
      InitRequest.fromPartial({ initSecret: secret, resumeProof: resumeProof(answer.resumeKey, key(30)) }),
    )
    expect(resumed.code, resumed.details).to.equal(status.OK)
    expect(resumed.kubeconfig).to.deep.equal(answer.kubeconfig)
    await daemon.done // it stops by itself (mocha's timeout bounds the wait)
    expect(daemon.outcome).to.equal('initialized')
    expect(await InitResultKeeper.restore(paths), 'handed over: nothing kept').to.equal(undefined)
    expect(spyTouched).to.deep.equal([])
  })
})
