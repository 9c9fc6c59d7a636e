/**
 * kms.API/GetDataKeys: the disk key and the measurement secret of a join ticket in one call, and a
 * client that still works with a key service from before it (one GetDataKey call per key).
 */
import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { APIService, type GetDataKeysResponse } from '../../src/gen/keyservice.js'
import { ClusterKms } from '../../src/lib/kms/index.js'
import { KeyServiceClient, KeyServiceRefusedError } from '../../src/lib/kms/keyservice-client.js'
import { createKeyService, MAX_KEYS_PER_CALL, type KeyService } from '../../src/lib/kms/keyservice-server.js'
import { createLogger } from '../../src/lib/system/index.js'

const masterSecret = { key: Buffer.alloc(32, 0x5a), salt: Buffer.alloc(32, 0xa5) }
const kms = new ClusterKms(masterSecret.key, masterSecret.salt)
const DISK = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'

describe('key service: several keys in one call (GetDataKeys)', () => {
  const cleanups: Array<() => unknown> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  async function serve() {
    const lines: string[] = []
    const service: KeyService = createKeyService({
      listen: '127.0.0.1:0',
      masterSecret,
      logger: createLogger({ format: 'json', write: (l) => lines.push(l) }),
    })
    cleanups.push(() => service.stop(100))
    return { client: clientOf(await service.start()), lines }
  }

  function clientOf(address: string): KeyServiceClient {
    const client = new KeyServiceClient(address)
    cleanups.push(() => client.close())
    return client
  }

  /** A key service of our own making: only the handlers given, the rest UNIMPLEMENTED as grpc-js answers. */
  async function serveOnly(handlers: grpc.UntypedServiceImplementation) {
    const server = new grpc.Server()
    server.addService(APIService, handlers)
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    )
    cleanups.push(() => server.forceShutdown())
    return clientOf(`127.0.0.1:${port}`)
  }

  it('answers what ClusterKms derives, in the order asked', async () => {
    const { client } = await serve()
    const keys = await client.getDataKeys([
      { id: DISK, length: 32 },
      { id: 'measurementSecret', length: 32 },
      { id: 'x', length: 64 },
    ])
    expect(keys).to.deep.equal([
      kms.deriveDataKey(DISK, 32),
      kms.measurementSecret(),
      kms.deriveDataKey('x', 64),
    ])
  })

  const refused: Record<string, { keys: Array<{ id: string; length: number }>; details: string }> = {
    'no key at all': { keys: [], details: 'keys: must name at least one key' },
    'a key of length 0 among good ones': {
      keys: [
        { id: DISK, length: 32 },
        { id: 'measurementSecret', length: 0 },
      ],
      details: 'keys[1].length: 0 is out of range, want 1 to 4096 bytes',
    },
    'an empty ID': { keys: [{ id: '', length: 32 }], details: 'keys[0].data_key_id: must not be empty' },
    [`${MAX_KEYS_PER_CALL + 1} keys`]: {
      keys: Array.from({ length: MAX_KEYS_PER_CALL + 1 }, (_, i) => ({ id: `k${i}`, length: 32 })),
      details: `keys: ${MAX_KEYS_PER_CALL + 1} keys in one call, want at most ${MAX_KEYS_PER_CALL}`,
    },
  }
  for (const [name, tc] of Object.entries(refused))
    it(`refuses ${name} with INVALID_ARGUMENT naming the field, and derives none`, async () => {
      const { client, lines } = await serve()
      const err = await client.getDataKeys(tc.keys).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(KeyServiceRefusedError).and.include({ code: grpc.status.INVALID_ARGUMENT })
      expect((err as Error).message).to.match(new RegExp(`\\(INVALID_ARGUMENT\\): ${escape(tc.details)}$`))
      expect(lines.join('\n')).not.to.include('Data keys issued')
    })

  it('logs one line per call naming every ID and length, and never a key', async () => {
    const { client, lines } = await serve()
    const keys = await client.getDataKeys([
      { id: DISK, length: 32 },
      { id: 'measurementSecret', length: 32 },
    ])
    const issued = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.msg === 'Data keys issued')
    expect(issued.map((e) => e.keyIds)).to.deep.equal([[`${DISK}/32`, 'measurementSecret/32']])
    const text = lines.join('\n')
    for (const secret of [...keys, masterSecret.key, masterSecret.salt])
      for (const encoding of ['hex', 'base64'] as const)
        expect(text).not.to.include(secret.toString(encoding))
  })

  it('asks a key service without GetDataKeys one key per call, and goes on so', async () => {
    const asked: string[] = []
    const client = await serveOnly({
      getDataKey: (
        call: grpc.ServerUnaryCall<{ dataKeyId: string; length: number }, unknown>,
        reply: grpc.sendUnaryData<unknown>,
      ) => {
        asked.push(call.request.dataKeyId)
        reply(null, { dataKey: kms.deriveDataKey(call.request.dataKeyId, call.request.length) })
      },
    })
    const wanted = [
      { id: DISK, length: 32 },
      { id: 'measurementSecret', length: 32 },
    ]
    expect(await client.getDataKeys(wanted)).to.deep.equal([
      kms.deriveDataKey(DISK, 32),
      kms.measurementSecret(),
    ])
    expect(await client.getDataKeys(wanted)).to.have.length(2)
    expect(asked.sort()).to.deep.equal([DISK, DISK, 'measurementSecret', 'measurementSecret'])
  })

  const short: Record<string, { answer: GetDataKeysResponse; says: string }> = {
    'fewer keys than asked for': {
      answer: { dataKeys: [Buffer.alloc(32)] },
      says: 'sent 1 keys, want 2',
    },
    'a key of another length': {
      answer: { dataKeys: [Buffer.alloc(32), Buffer.alloc(16)] },
      says: 'sent 16 bytes for data key "measurementSecret", want 32',
    },
  }
  for (const [name, tc] of Object.entries(short))
    it(`refuses an answer with ${name}`, async () => {
      const client = await serveOnly({
        getDataKeys: (_call: unknown, reply: grpc.sendUnaryData<GetDataKeysResponse>) =>
          reply(null, tc.answer),
      })
      await expect(
        client.getDataKeys([
          { id: DISK, length: 32 },
          { id: 'measurementSecret', length: 32 },
        ]),
      ).to.be.rejectedWith(`key service at ${client.address} ${tc.says}`)
    })
})

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
