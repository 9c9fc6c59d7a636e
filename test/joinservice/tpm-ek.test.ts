/**
 * The join service of a tpm-ek cluster over real gRPC on loopback, with nodes on swtpms
 * manufactured by swtpm_setup --create-ek-cert (a local CA each) and the validator production
 * builds from the join-config's measurements and the node config's roots. The cluster trusts one
 * manufacturer: a node whose TPM another CA manufactured is refused at the challenge, before any
 * credential is made for it, and the audit trail says why.
 */
import { X509Certificate } from 'node:crypto'
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import { APIClient, type IssueJoinTicketResponse } from '../../src/gen/join.js'
import {
  createValidator,
  encodeJoinConfig,
  type Issuer,
  type Measurements,
} from '../../src/lib/attestation/index.js'
import { createTpmEkIssuer } from '../../src/lib/attestation/tpm-ek.js'
import { isAttestationFailure } from '../../src/lib/atls/index.js'
import { clientOn, openAttestedClientChannel } from '../../src/lib/atls/index.js'
import {
  createJoinService,
  createKubeletSigner,
  MeasurementsStore,
  validatorSourceFrom,
  staticMembers,
} from '../../src/lib/joinservice/index.js'
import { type ClusterCa } from '../../src/lib/joinservice/cluster-ca.js'
import { type JoinService } from '../../src/lib/joinservice/server.js'
import { createLogger, writeFileAtomic } from '../../src/lib/system/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { expect } from '../support/chai.js'
import { InMemoryStateDisks } from '../support/state-disks.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  COMPONENTS,
  encodeFakeCsr,
  FakeTokenIssuer,
  fakeCsrParser,
  makeClusterCa,
  MEASUREMENT_SALT,
  nodeCsr,
  realDataKeys,
  serviceFiles,
} from './fakes.js'

const UUID = '0b4f5e2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b'

interface AuditLine {
  component?: string
  rpc?: string
  node?: string
  role?: string
  peer?: string
  verdict?: string
  reason?: string
}

describe('join service of a tpm-ek cluster (swtpms with EK certificates)', function () {
  this.timeout(60_000)
  let member: SwtpmHandle
  let stranger: SwtpmHandle
  let ca: ClusterCa
  let dir: TempDir
  let store: MeasurementsStore
  let service: JoinService
  let target: string
  let lines: string[]
  let tokens: FakeTokenIssuer
  let keysAsked: string[]

  before(async () => {
    ;[member, stranger, ca] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
      makeClusterCa(),
    ])
  })
  after(async () => Promise.all([member?.stop(), stranger?.stop()]))

  beforeEach(async () => {
    dir = await makeTempDir('constell-join-tpm-ek-')
    lines = []
    tokens = new FakeTokenIssuer()
    keysAsked = []
    // the cluster's measurements: what a fresh TPM shows (both TPMs run the same "image")
    const pcrs = await readPcrs(member.open, [4, 9, 15])
    const measurements: Measurements = new Map(
      [...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]),
    )
    const joinConfig = path.join(dir.dir, 'join-config.json')
    await writeFileAtomic(joinConfig, encodeJoinConfig(measurements))
    const logger = createLogger({ format: 'json', write: (l) => lines.push(l) })
    store = await MeasurementsStore.open({ file: joinConfig, logger, pollIntervalMs: 60_000 })
    // the node config's attestation.tpmEK.roots: the member's manufacturer only
    const roots = [new X509Certificate(member.ekCa!.intermediate)]
    const dataKeys = realDataKeys()
    service = createJoinService({
      listen: '127.0.0.1:0',
      validatorSource: validatorSourceFrom(store, (m) => createValidator('tpm-ek', m, undefined, { roots })),
      keyService: (keys) => (keysAsked.push(...keys.map((k) => k.id)), dataKeys(keys)),
      tokens,
      kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
      parseCsr: fakeCsrParser,
      ca,
      controlPlaneServiceFiles: serviceFiles,
      kubernetes: async () => ({ version: 'v1.31.13', components: COMPONENTS }),
      stateDisks: new InMemoryStateDisks(),
      cluster: { measurementSalt: MEASUREMENT_SALT, apiServerEndpoint: '10.0.0.1:6443' },
      members: staticMembers([{ name: 'worker-1', role: 'worker', vpcIP: '127.0.0.1' }]),
      clock: () => new Date(),
      logger,
    })
    target = `127.0.0.1:${(await service.start()).split(':').pop()}`
  })
  afterEach(async () => {
    await service?.stop(500)
    store?.close()
    await dir.cleanup()
  })

  /** One JoinClient attempt: challenge (with the activation request), attestation, one call, on one connection. */
  async function join(issuer: Issuer): Promise<IssueJoinTicketResponse> {
    const channel = await openAttestedClientChannel(target, issuer)
    const client = clientOn(channel, APIClient)
    const request = {
      diskUuid: UUID,
      certificateRequest: encodeFakeCsr(await nodeCsr('worker-1', '127.0.0.1')),
      isControlPlane: false,
      hostPublicKey: Buffer.alloc(0),
      hostCertificatePrincipals: [],
    }
    try {
      return await new Promise<IssueJoinTicketResponse>((resolve, reject) =>
        client.issueJoinTicket(request, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err, res) =>
          err ? reject(err) : resolve(res),
        ),
      )
    } finally {
      channel.close()
    }
  }
  const audits = () =>
    lines.map((l) => JSON.parse(l) as AuditLine).filter((l) => l.component === 'joinservice.audit')

  it("issues a ticket to a node of the cluster's manufacturer, after its TPM activated the credential", async () => {
    const ticket = await join(createTpmEkIssuer(member.open))
    expect(ticket.token).to.equal(tokens.issued[0])
    expect(audits()).to.have.length(1)
    expect(audits()[0]).to.include({ rpc: 'IssueJoinTicket', node: 'worker-1', verdict: 'ok' })
  })

  it('refuses a node whose TPM another CA manufactured at the challenge: no credential, no key, audited', async () => {
    const err = (await join(createTpmEkIssuer(stranger.open)).then(
      () => expect.fail('the stranger joined'),
      (e: unknown) => e,
    )) as grpc.ServiceError
    expect(err.code).to.equal(grpc.status.PERMISSION_DENIED)
    expect(isAttestationFailure(err)).to.equal(true)
    expect(err.details).to.match(
      /EK certificate chain: EndorsementKeyCertificates\[0\] .* chains to none of the 1 configured manufacturer roots/,
    )
    expect(keysAsked, 'key service spy').to.deep.equal([])
    expect(tokens.issued).to.deep.equal([])
    const [line, ...more] = audits()
    expect(more).to.have.length(0)
    expect(line).to.include({ rpc: 'Challenge', node: '', role: 'unknown', verdict: 'refused' })
    expect(line?.peer).to.match(/^127\.0\.0\.1:\d+$/)
    expect(line?.reason).to.match(
      /EK certificate chain: .*chains to none of the 1 configured manufacturer roots/,
    )
  })
})
