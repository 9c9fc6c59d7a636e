import { credentials, status } from '@grpc/grpc-js'
import { execFile } from 'node:child_process'
import { chmod, mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import path from 'node:path'
import { connectAsNobody } from '../support/as-nobody.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { freePort, holdPort } from '../support/ports.js'
import { APIClient } from '../../src/gen/keyservice.js'
import { CliError, ExitCode, exitCodeOf } from '../../src/lib/errors/index.js'
import {
  ClusterKms,
  KeyServiceUnreachableError,
  readNodeMasterSecret,
  type MasterSecret,
} from '../../src/lib/kms/index.js'
import { getDataKey, KeyServiceRefusedError } from '../../src/lib/kms/keyservice-client.js'
import {
  createKeyService,
  KeyService,
  MAX_DATA_KEY_BYTES,
  MAX_KEY_REQUEST_BYTES,
  type DataKeySource,
} from '../../src/lib/kms/keyservice-server.js'
import { createLogger } from '../../src/lib/system/index.js'
import { writeServiceSecrets } from '../../src/lib/bootstrapper/node-state.js'
import { nodePaths, type NodePaths } from '../../src/lib/paths.js'

const masterSecret = { key: Buffer.alloc(32, 0x5a), salt: Buffer.alloc(32, 0xa5) }

describe('key service', () => {
  const running: KeyService[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.stop(100)))
  })

  /** A key service on a loopback port the kernel picks, with its JSON log captured. */
  async function serve(opts: { keys?: DataKeySource; secret?: MasterSecret; listen?: string } = {}) {
    const lines: string[] = []
    const logger = createLogger({ format: 'json', write: (l) => lines.push(l) })
    const listen = opts.listen ?? '127.0.0.1:0'
    const service = opts.keys
      ? new KeyService(listen, opts.keys, logger)
      : createKeyService({ listen, masterSecret: opts.secret ?? masterSecret, logger })
    running.push(service)
    const address = await service.start()
    return { service, address, lines, port: Number(address.split(':').pop()) }
  }

  describe('the master secret a node persisted', () => {
    let dir: string
    let cleanup: () => Promise<void>
    let paths: NodePaths
    beforeEach(async () => {
      ;({ dir, cleanup } = await makeTempDir())
      paths = nodePaths(dir)
      await writeServiceSecrets(paths, {
        masterSecret: masterSecret.key,
        salt: masterSecret.salt,
        measurementSecret: Buffer.alloc(32, 1),
        measurementSalt: Buffer.alloc(32, 2),
      })
    })
    afterEach(() => cleanup())

    it('reads what init wrote on the node', async () => {
      expect(await readNodeMasterSecret(paths)).to.deep.equal(masterSecret)
    })

    it('accepts a file only its owner can read, even without write access (0400)', async () => {
      await chmod(paths.masterSecretFile, 0o400)
      expect(await readNodeMasterSecret(paths)).to.deep.equal(masterSecret)
    })

    type File = 'masterSecretFile' | 'masterSaltFile'
    const refused: Record<string, { file: File; spoil: (file: string) => Promise<void>; says: string }> = {
      'a master secret readable by others (0644)': {
        file: 'masterSecretFile',
        spoil: (f) => chmod(f, 0o644),
        says: 'is mode 0644, want 0600: others could read it',
      },
      'a master secret readable by its group (0640)': {
        file: 'masterSecretFile',
        spoil: (f) => chmod(f, 0o640),
        says: 'is mode 0640, want 0600',
      },
      'a salt writable by others (0602)': {
        file: 'masterSaltFile',
        spoil: (f) => chmod(f, 0o602),
        says: 'is mode 0602, want 0600',
      },
      'a symlink to the real file': {
        file: 'masterSecretFile',
        spoil: async (f) => {
          await writeFile(`${f}.real`, masterSecret.key, { mode: 0o600 })
          await rmAndLink(`${f}.real`, f)
        },
        says: 'is not a regular file',
      },
      'a directory': {
        file: 'masterSaltFile',
        spoil: async (f) => {
          await rm(f)
          await mkdir(f, { mode: 0o700 })
        },
        says: 'is not a regular file',
      },
      'a missing master secret': {
        file: 'masterSecretFile',
        spoil: (f) => rm(f),
        says: 'does not exist',
      },
      'a master secret shorter than 16 bytes': {
        file: 'masterSecretFile',
        spoil: (f) => writeFile(f, Buffer.alloc(15, 0x5a)),
        says: 'is malformed: 15 bytes, want at least 16',
      },
      'an empty salt': {
        file: 'masterSaltFile',
        spoil: (f) => writeFile(f, ''),
        says: 'is malformed: 0 bytes, want at least 32',
      },
    }
    for (const [name, tc] of Object.entries(refused)) {
      it(`refuses ${name}, naming the file`, async () => {
        const file = paths[tc.file]
        await tc.spoil(file)
        const err = await readNodeMasterSecret(paths).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(Error)
        expect((err as Error).message)
          .to.include(file)
          .and.include(tc.says)
        expect((err as Error).message).to.not.include(masterSecret.key.toString('hex'))
      })
    }
  })

  describe('GetDataKey over gRPC', () => {
    it('serves what ClusterKms derives for the same ID and length', async () => {
      const { address } = await serve()
      const kms = new ClusterKms(masterSecret.key, masterSecret.salt)
      const cases: Array<[string, number]> = [
        ['measurementSecret', 32],
        ['0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0', 32],
        ['a', 1],
        ['x', MAX_DATA_KEY_BYTES],
      ]
      for (const [id, length] of cases) {
        const got = await rawGetDataKey(address, id, length)
        expect(got.code, got.details).to.equal(status.OK)
        expect(got.key).to.deep.equal(kms.deriveDataKey(id, length))
      }
    })

    // Constellation's own HKDF vectors (internal/crypto/testvector), "key-" prefix added by the service.
    const vectors: Record<string, { secret: MasterSecret; id: string; want: string }> = {
      'all zero': {
        secret: { key: Buffer.alloc(32, 0), salt: Buffer.alloc(32, 0) },
        id: '00000000-0000-0000-0000-000000000000',
        want: '2b5c829f691bfd4232f8aac464bccc07e605c7c8e82cbca09837e86d0b6d0665',
      },
      'all 0xff': {
        secret: { key: Buffer.alloc(32, 0xff), salt: Buffer.alloc(32, 0xff) },
        id: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
        want: '1484aa39d3415e906e07940ff215d8b1eee705d3027dba93306af4abff4f70be',
      },
      'measurement secret': {
        secret: { key: counting(0x40, 32), salt: counting(0x60, 32) },
        id: 'measurementSecret',
        want: '4790578891f3fe6cc22cb661ecdc1b7e33121b1287546a52ba33a9136719c213',
      },
    }
    for (const [name, tc] of Object.entries(vectors)) {
      it(`matches Constellation's test vector: ${name}`, async () => {
        const { address } = await serve({ secret: tc.secret })
        const got = await rawGetDataKey(address, tc.id, 32)
        expect(got.key?.toString('hex')).to.equal(tc.want)
      })
    }

    const invalid: Record<string, { id: string; length: number; details: string }> = {
      'an empty ID': { id: '', length: 32, details: 'data_key_id: must not be empty' },
      'length 0': { id: 'disk', length: 0, details: 'length: 0 is out of range, want 1 to 4096 bytes' },
      'length 4097': {
        id: 'disk',
        length: 4097,
        details: 'length: 4097 is out of range, want 1 to 4096 bytes',
      },
    }
    for (const [name, tc] of Object.entries(invalid)) {
      it(`answers ${name} with INVALID_ARGUMENT naming the field`, async () => {
        const { address } = await serve()
        const got = await rawGetDataKey(address, tc.id, tc.length)
        expect(got).to.deep.equal({ code: status.INVALID_ARGUMENT, details: tc.details })
      })
    }

    it('refuses a request far larger than any key request', async () => {
      const { address, lines } = await serve()
      const got = await rawGetDataKey(address, 'k'.repeat(MAX_KEY_REQUEST_BYTES), 32)
      expect(got.code).to.equal(status.RESOURCE_EXHAUSTED)
      expect(lines.join('\n')).to.not.include('k'.repeat(100))
    })

    it('logs one JSON line per request with the ID and length, and never a key or the master secret', async () => {
      const { address, lines } = await serve()
      const issued = [
        await rawGetDataKey(address, 'measurementSecret', 32),
        await rawGetDataKey(address, 'b', 64),
      ]
      await rawGetDataKey(address, '', 32)
      await rawGetDataKey(address, 'c', 0)
      const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
      const perRequest = entries.filter(
        (e) => e.msg === 'Data key issued' || e.msg === 'Data key request refused',
      )
      expect(perRequest.map((e) => [e.msg, e.keyId, e.length, e.level])).to.deep.equal([
        ['Data key issued', 'measurementSecret', 32, 'info'],
        ['Data key issued', 'b', 64, 'info'],
        ['Data key request refused', '', 32, 'warn'],
        ['Data key request refused', 'c', 0, 'warn'],
      ])
      for (const e of perRequest) expect(e.component).to.equal('keyservice')
      const secrets = [masterSecret.key, masterSecret.salt, ...issued.map((r) => r.key ?? Buffer.alloc(0))]
      const text = lines.join('\n')
      for (const secret of secrets)
        for (const encoding of ['hex', 'base64', 'base64url'] as const)
          expect(text).to.not.include(secret.toString(encoding))
      expect(text).to.not.include('"type":"Buffer"')
    })

    it('answers INTERNAL without details when deriving fails, and logs why', async () => {
      const failing: DataKeySource = {
        deriveDataKey: () => Promise.reject(new Error('hsm offline')),
      }
      const { address, lines } = await serve({ keys: failing })
      expect(await rawGetDataKey(address, 'disk', 32)).to.deep.equal({
        code: status.INTERNAL,
        details: 'deriving the data key failed',
      })
      expect(
        lines.some((l) => l.includes('Deriving a data key failed') && l.includes('hsm offline')),
      ).to.equal(true)
    })

    it('stop() lets a call in flight answer, takes no new ones, and frees the port', async () => {
      const kms = new ClusterKms(masterSecret.key, masterSecret.salt)
      const gate = deferred()
      const entered = deferred()
      const slow: DataKeySource = {
        async deriveDataKey(id, length) {
          entered.resolve()
          await gate.promise
          return kms.deriveDataKey(id, length)
        },
      }
      const { service, address, port } = await serve({ keys: slow })
      const inFlight = rawGetDataKey(address, 'disk', 32)
      await entered.promise
      let stopped = false
      const stopping = service.stop().then(() => (stopped = true))
      expect((await rawGetDataKey(address, 'late', 32)).code).to.equal(status.UNAVAILABLE)
      expect(stopped).to.equal(false)
      gate.resolve()
      expect((await inFlight).key).to.deep.equal(kms.deriveDataKey('disk', 32))
      await stopping
      await service.done
      expect(service.stop()).to.equal(service.stop())
      await listenAndClose(port)
    })

    it('stop() force-stops a call that outlives the grace period', async () => {
      const entered = deferred()
      const never: DataKeySource = {
        deriveDataKey: () => {
          entered.resolve()
          return new Promise<Buffer>(() => {})
        },
      }
      const { service, address, port } = await serve({ keys: never })
      const inFlight = rawGetDataKey(address, 'disk', 32)
      await entered.promise
      await service.stop(50)
      expect((await inFlight).code).to.not.equal(status.OK)
      await listenAndClose(port)
    })

    it('a taken port is a setup error naming keyService.listen', async () => {
      const held = await holdPort()
      try {
        const err = await serve({ listen: `127.0.0.1:${held.port}` }).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(CliError)
        expect((err as CliError).message).to.equal(`listening on 127.0.0.1:${held.port}`)
        expect((err as CliError).hint).to.include('keyService.listen')
      } finally {
        await held.release()
      }
    })

    it('warns when it listens beyond loopback, since it authenticates no one', async () => {
      const loopback = await serve()
      expect(loopback.lines.join('\n')).to.not.include('reachable from other hosts')
      const wildcard = await serve({ listen: '0.0.0.0:0' })
      const warning = wildcard.lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((e) => e.level === 'warn')
      expect(warning?.msg).to.include('reachable from other hosts')
    })
  })
  describe('on a unix socket (unix:/path): only its owner can connect', () => {
    let dir: string
    let cleanup: () => Promise<void>
    const others: Server[] = []
    beforeEach(async () => {
      ;({ dir, cleanup } = await makeTempDir())
      await chmod(dir, 0o755) // others may enter the test's folder: only the service's own modes count
    })
    afterEach(async () => {
      others.splice(0).forEach((s) => s.close())
      await cleanup()
    })

    it('creates its folder 0700 and the socket 0600, serves its owner and refuses another user', async () => {
      const socket = path.join(dir, 'node', 'keyservice.sock')
      const { address } = await serve({ listen: `unix:${socket}` })
      expect(address).to.equal(`unix:${socket}`)
      expect((await stat(socket)).mode & 0o777).to.equal(0o600)
      expect((await stat(path.dirname(socket))).mode & 0o777).to.equal(0o700)
      expect(await getDataKey(address, 'disk', 32)).to.have.length(32)
      expect(process.getuid?.(), 'acting as user nobody needs root (CI runs as root)').to.equal(0)
      expect(await connectAsNobody(address)).to.equal('EACCES')
    })

    it('replaces the socket a killed service left behind', async () => {
      const socket = path.join(dir, 'node', 'keyservice.sock')
      await mkdir(path.dirname(socket), { mode: 0o700 })
      await leaveStaleSocket(socket)
      const { address } = await serve({ listen: `unix:${socket}` })
      expect(await getDataKey(address, 'disk', 32)).to.have.length(32)
    })

    const refusals: Record<
      string,
      { listen?: string; prepare: (socket: string) => Promise<void>; says: RegExp }
    > = {
      'a folder other users can enter (0755)': {
        prepare: async (socket) => {
          await mkdir(path.dirname(socket))
          await chmod(path.dirname(socket), 0o755)
        },
        says: /is mode 0755: other users could reach .*keyservice\.sock/,
      },
      'a file that is not a socket at its path': {
        prepare: async (socket) => {
          await mkdir(path.dirname(socket), { mode: 0o700 })
          await writeFile(socket, 'x')
        },
        says: /keyservice\.sock exists and is not a socket/,
      },
      'a socket another process listens on': {
        prepare: async (socket) => {
          await mkdir(path.dirname(socket), { mode: 0o700 })
          const other = createServer()
          others.push(other)
          await new Promise<void>((resolve) => other.listen(socket, resolve))
        },
        says: /another process listens on .*keyservice\.sock/,
      },
      'a relative path': {
        listen: 'unix:relative.sock',
        prepare: async () => {},
        says: /"unix:relative\.sock".*absolute/,
      },
    }
    for (const [name, tc] of Object.entries(refusals))
      it(`refuses ${name}, naming keyService.listen`, async () => {
        const socket = path.join(dir, 'node', 'keyservice.sock')
        await tc.prepare(socket)
        const err = await serve({ listen: tc.listen ?? `unix:${socket}` }).catch((e: unknown) => e)
        expect(err).to.be.instanceOf(CliError)
        expect((err as Error).message).to.match(tc.says)
        expect((err as CliError).hint).to.include('keyService.listen')
      })
  })

  describe('getDataKey, the client', () => {
    it('returns the key the service derived', async () => {
      const { address } = await serve()
      const kms = new ClusterKms(masterSecret.key, masterSecret.salt)
      expect(await getDataKey(address, 'measurementSecret', 32)).to.deep.equal(kms.measurementSecret())
    })

    it('a request the service refuses is KeyServiceRefusedError with its code and reason', async () => {
      const { address } = await serve()
      const err = await getDataKey(address, 'disk', 0).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(KeyServiceRefusedError)
      expect((err as KeyServiceRefusedError).code).to.equal(status.INVALID_ARGUMENT)
      expect((err as Error).message).to.equal(
        `key service at ${address} refused the request (INVALID_ARGUMENT): length: 0 is out of range, want 1 to 4096 bytes`,
      )
      expect(exitCodeOf(err)).to.equal(ExitCode.Failure)
    })

    it('nothing listening is KeyServiceUnreachableError naming the address and why', async () => {
      const address = `127.0.0.1:${await freePort()}`
      const err = await getDataKey(address, 'disk', 32).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(KeyServiceUnreachableError)
      expect((err as Error).message).to.match(
        new RegExp(`^key service at ${address} is unreachable: .*ECONNREFUSED`),
      )
      expect((err as CliError).hint).to.include('keyService.listen')
      expect(exitCodeOf(err)).to.equal(ExitCode.Unreachable)
    })

    it('a service that was stopped is unreachable, and reachable again once restarted', async () => {
      const first = await serve()
      await first.service.stop()
      await expect(getDataKey(first.address, 'disk', 32)).to.be.rejectedWith(KeyServiceUnreachableError)
      const again = await serve({ listen: first.address })
      expect(await getDataKey(again.address, 'disk', 32)).to.have.length(32)
    })

    it('no answer within the timeout is KeyServiceUnreachableError saying so', async () => {
      const never: DataKeySource = { deriveDataKey: () => new Promise<Buffer>(() => {}) }
      const { address } = await serve({ keys: never })
      await expect(getDataKey(address, 'disk', 32, { timeoutMs: 200 })).to.be.rejectedWith(
        KeyServiceUnreachableError,
        `key service at ${address} did not answer within 200 ms`,
      )
    })

    it('an aborted signal cancels the call and rejects with its reason', async () => {
      const entered = deferred()
      const never: DataKeySource = {
        deriveDataKey: () => {
          entered.resolve()
          return new Promise<Buffer>(() => {})
        },
      }
      const { address } = await serve({ keys: never })
      const controller = new AbortController()
      const call = getDataKey(address, 'disk', 32, { signal: controller.signal })
      await entered.promise
      const reason = new Error('join service stopping')
      controller.abort(reason)
      await expect(call).to.be.rejectedWith(reason)
      await expect(getDataKey(address, 'disk', 32, { signal: controller.signal })).to.be.rejectedWith(reason)
    })

    it('refuses a key of another length than asked for', async () => {
      const short: DataKeySource = { deriveDataKey: () => Buffer.alloc(5) }
      const { address } = await serve({ keys: short })
      await expect(getDataKey(address, 'disk', 32)).to.be.rejectedWith(
        `key service at ${address} sent 5 bytes for data key "disk", want 32`,
      )
    })
  })
})

/** A socket file whose listener was killed (SIGKILL: no chance to remove it). */
function leaveStaleSocket(socket: string): Promise<void> {
  const listenThenDie = `require('node:net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))`
  return new Promise((resolve) => execFile(process.execPath, ['-e', listenThenDie, socket], () => resolve()))
}

async function rmAndLink(target: string, link: string): Promise<void> {
  await rm(link)
  await symlink(target, link)
}

/** GetDataKey with the generated client: the status and details exactly as the server sent them. */
function rawGetDataKey(
  address: string,
  dataKeyId: string,
  length: number,
): Promise<{ code: status; details: string; key?: Buffer }> {
  const client = new APIClient(address, credentials.createInsecure())
  return new Promise((resolve) =>
    client.getDataKey({ dataKeyId, length }, (err, res) => {
      client.close()
      resolve(
        err ? { code: err.code, details: err.details } : { code: status.OK, details: '', key: res.dataKey },
      )
    }),
  )
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/** n bytes start, start+1, …, as Constellation's test vectors spell them. */
function counting(start: number, n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => start + i))
}

/** Resolves when the port can be bound again: nothing of the stopped server holds it. */
function listenAndClose(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()))
  })
}
