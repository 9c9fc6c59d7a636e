import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync, cpSync } from 'node:fs'
import path from 'node:path'
import protobuf from 'protobufjs'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { withTempDir } from '../support/temp.js'
import * as components from '../../src/gen/components.js'
import * as init from '../../src/gen/init.js'
import * as join from '../../src/gen/join.js'
import * as kms from '../../src/gen/keyservice.js'
import * as recover from '../../src/gen/recover.js'

/**
 * Field numbers exactly as Constellation's protos (shared/reference/constellation.md §2), plus ours
 * from 100 on (InitRequest's measurements and resume_proof), which Constellation's nodes skip.
 */
const WIRE: Record<string, Record<string, number>> = {
  'components.Component': { url: 1, hash: 2, install_path: 3, extract: 4 },
  'init.InitRequest': {
    kms_uri: 1,
    storage_uri: 2,
    measurement_salt: 3,
    kubernetes_version: 5,
    conformance_mode: 6,
    kubernetes_components: 7,
    init_secret: 8,
    cluster_name: 9,
    apiserver_cert_sans: 10,
    service_cidr: 11,
    measurements: 100,
    resume_proof: 101,
  },
  'init.InitResponse': { init_success: 1, init_failure: 2, log: 3 },
  'init.InitSuccessResponse': { kubeconfig: 1, owner_id: 2, cluster_id: 3 },
  'init.InitFailureResponse': { error: 1 },
  'init.LogResponseType': { log: 1 },
  'join.IssueJoinTicketRequest': {
    disk_uuid: 1,
    certificate_request: 2,
    is_control_plane: 3,
    host_public_key: 4,
    host_certificate_principals: 5,
  },
  'join.IssueJoinTicketResponse': {
    state_disk_key: 1,
    measurement_salt: 2,
    measurement_secret: 3,
    kubelet_cert: 4,
    api_server_endpoint: 5,
    token: 6,
    discovery_token_ca_cert_hash: 7,
    control_plane_files: 8,
    kubernetes_version: 9,
    kubernetes_components: 10,
    authorized_ca_public_key: 11,
    host_certificate: 12,
  },
  'join.control_plane_cert_or_key': { name: 1, data: 2 },
  'join.IssueRejoinTicketRequest': { disk_uuid: 1 },
  'join.IssueRejoinTicketResponse': { state_disk_key: 1, measurement_secret: 2 },
  'kms.GetDataKeyRequest': { data_key_id: 1, length: 2 },
  'kms.GetDataKeyResponse': { data_key: 1 },
  'recoverproto.RecoverMessage': { kms_uri: 3, storage_uri: 4 },
  'recoverproto.RecoverResponse': {},
}

const b = (s: string) => Buffer.from(s)
const component = {
  url: 'https://x/kubeadm',
  hash: 'sha256:' + 'ab'.repeat(32),
  installPath: '/run/state/bin/kubeadm',
  extract: true,
}

/** One filled-in example of every message, with the protobufjs type that must decode it identically. */
const samples: Array<{
  name: string
  fns: { encode(m: never): { finish(): Uint8Array }; decode(b: Uint8Array): unknown }
  value: object
}> = [
  { name: 'components.Component', fns: components.Component, value: component },
  {
    name: 'init.InitRequest',
    fns: init.InitRequest,
    value: {
      kmsUri: 'kms://cluster-kms?key=AAAA&salt=BBBB',
      storageUri: 'storage://no-store',
      measurementSalt: b('salt'),
      kubernetesVersion: 'v1.31.13',
      conformanceMode: true,
      kubernetesComponents: [component],
      initSecret: b('secret'),
      clusterName: 'demo',
      apiserverCertSans: ['10.0.0.1', 'api.example'],
      serviceCidr: '10.96.0.0/12',
      measurements: {
        4: { expected: Buffer.alloc(32, 1), warnOnly: false },
        15: { expected: Buffer.alloc(32), warnOnly: true },
      },
      resumeProof: Buffer.alloc(64, 7),
    },
  },
  {
    name: 'init.InitResponse',
    fns: init.InitResponse,
    value: { kind: { $case: 'log', value: { log: b('journal line') } } },
  },
  {
    name: 'init.InitResponse',
    fns: init.InitResponse,
    value: {
      kind: {
        $case: 'initSuccess',
        value: { kubeconfig: b('apiVersion: v1'), ownerId: Buffer.alloc(0), clusterId: Buffer.alloc(32, 9) },
      },
    },
  },
  {
    name: 'init.InitResponse',
    fns: init.InitResponse,
    value: { kind: { $case: 'initFailure', value: { error: 'kubeadm failed' } } },
  },
  {
    name: 'join.IssueJoinTicketRequest',
    fns: join.IssueJoinTicketRequest,
    value: {
      diskUuid: 'uuid',
      certificateRequest: b('csr'),
      isControlPlane: true,
      hostPublicKey: b('ssh'),
      hostCertificatePrincipals: ['10.0.0.2'],
    },
  },
  {
    name: 'join.IssueJoinTicketResponse',
    fns: join.IssueJoinTicketResponse,
    value: {
      stateDiskKey: Buffer.alloc(32, 1),
      measurementSalt: Buffer.alloc(32, 2),
      measurementSecret: Buffer.alloc(32, 3),
      kubeletCert: b('pem'),
      apiServerEndpoint: '10.0.0.1:6443',
      token: 'abcdef.0123456789abcdef',
      discoveryTokenCaCertHash: 'sha256:' + 'cd'.repeat(32),
      controlPlaneFiles: [{ name: 'ca.crt', data: b('pem') }],
      kubernetesVersion: 'v1.31.13',
      kubernetesComponents: [component],
      authorizedCaPublicKey: b('ca'),
      hostCertificate: b('cert'),
    },
  },
  { name: 'join.IssueRejoinTicketRequest', fns: join.IssueRejoinTicketRequest, value: { diskUuid: 'uuid' } },
  {
    name: 'join.IssueRejoinTicketResponse',
    fns: join.IssueRejoinTicketResponse,
    value: { stateDiskKey: b('k'), measurementSecret: b('s') },
  },
  { name: 'kms.GetDataKeyRequest', fns: kms.GetDataKeyRequest, value: { dataKeyId: 'key-abc', length: 32 } },
  { name: 'kms.GetDataKeyResponse', fns: kms.GetDataKeyResponse, value: { dataKey: Buffer.alloc(32, 5) } },
  {
    name: 'recoverproto.RecoverMessage',
    fns: recover.RecoverMessage,
    value: { kmsUri: 'kms://cluster-kms?key=AAAA&salt=BBBB', storageUri: 'storage://no-store' },
  },
]

describe('protocol definitions', () => {
  let root: protobuf.Root
  before(() => {
    root = new protobuf.Root()
    root.resolvePath = (_origin, target) => path.join(REPO_ROOT, 'proto', path.basename(target))
    root.loadSync(
      readdirSync(path.join(REPO_ROOT, 'proto')).filter((f) => f.endsWith('.proto')),
      { keepCase: true },
    )
  })

  for (const [typeName, fields] of Object.entries(WIRE)) {
    it(`${typeName} keeps Constellation's field numbers`, () => {
      const type = root.lookupType(typeName)
      const got = Object.fromEntries(Object.values(type.fields).map((f) => [f.name, f.id]))
      const oneofFields = Object.fromEntries(
        Object.values(type.oneofs ?? {}).flatMap((o) => o.fieldsArray.map((f) => [f.name, f.id])),
      )
      expect({ ...got, ...oneofFields }).to.deep.equal(fields)
    })
  }

  it('service method paths match Constellation', () => {
    expect(init.APIService.init.path).to.equal('/init.API/Init')
    expect(init.APIService.init.responseStream).to.equal(true)
    expect(join.APIService.issueJoinTicket.path).to.equal('/join.API/IssueJoinTicket')
    expect(join.APIService.issueRejoinTicket.path).to.equal('/join.API/IssueRejoinTicket')
    expect(kms.APIService.getDataKey.path).to.equal('/kms.API/GetDataKey')
    expect(recover.APIService.recover.path).to.equal('/recoverproto.API/Recover')
  })

  for (const [i, sample] of samples.entries()) {
    it(`round-trips ${sample.name} #${i} and protobufjs reads the same bytes`, () => {
      const bytes = sample.fns.encode(sample.value as never).finish()
      expect(sample.fns.decode(bytes)).to.deep.equal(sample.value)
      const decoded = root.lookupType(sample.name).decode(bytes).toJSON()
      expect(Object.keys(decoded)).to.not.be.empty
    })
  }

  it('a truncated message is a clean error, not a crash', () => {
    const bytes = init.InitRequest.encode({ ...init.InitRequest.fromPartial({ kmsUri: 'kms://x' }) }).finish()
    expect(() => init.InitRequest.decode(bytes.subarray(0, bytes.length - 2))).to.throw(RangeError)
  })

  it('src/gen is what scripts/gen-proto.sh produces from proto/', function () {
    return withTempDir(async (tmp) => {
      cpSync(path.join(REPO_ROOT, 'proto'), path.join(tmp, 'proto'), { recursive: true })
      cpSync(path.join(REPO_ROOT, 'scripts'), path.join(tmp, 'scripts'), { recursive: true })
      execFileSync('bash', [path.join(tmp, 'scripts/gen-proto.sh')], {
        stdio: 'pipe',
        env: { ...process.env, PROTO_PLUGIN: path.join(REPO_ROOT, 'node_modules/.bin/protoc-gen-ts_proto') },
      })
      // schemas.ts is scripts/gen-schemas.ts's output, checked in test/config/schemas-gen.test.ts.
      for (const file of readdirSync(path.join(REPO_ROOT, 'src/gen')).filter((f) => f !== 'schemas.ts')) {
        expect(readFileSync(path.join(tmp, 'src/gen', file), 'utf8'), file).to.equal(
          readFileSync(path.join(REPO_ROOT, 'src/gen', file), 'utf8'),
        )
      }
    }, 'constell-proto-')
  })
})
