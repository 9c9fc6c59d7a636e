import { expect } from '../support/chai.js'
import { InitRequest } from '../../src/gen/init.js'
import { initializeNode } from '../../src/lib/bootstrapper/init/init-node.js'
import { NodeLock } from '../../src/lib/bootstrapper/index.js'
import { API_SERVER_PORT, apiServerEndpoint, controlPlaneEndpoint } from '../../src/lib/contract/index.js'
import { type EndpointMetadata } from '../../src/lib/contract/api-server.js'
import { createKubeletSigner } from '../../src/lib/joinservice/kubelet-signer.js'
import { checkJoinRequest, issueJoinTicket } from '../../src/lib/joinservice/ticket.js'
import { clusterKmsUri, hashInitSecret } from '../../src/lib/kms/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { formatHostPort, parseHostPort } from '../../src/lib/system/index.js'
import { silentLogger } from '../../src/lib/system/logger.js'
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
} from '../joinservice/fakes.js'
import { InMemoryStateDisks } from '../support/state-disks.js'
import { makeTempDir } from '../support/temp.js'

const self = { name: 'cp-0', role: 'control-plane' as const, vpcIP: '10.0.0.1' }
const cases: Record<string, { loadBalancerEndpoint?: string; want: string }> = {
  'a load balancer on 443: joiners dial 443, as kubeadm init was told': {
    loadBalancerEndpoint: 'lb.example:443',
    want: 'lb.example:443',
  },
  'a load balancer on the API server port': {
    loadBalancerEndpoint: 'lb.example:6443',
    want: 'lb.example:6443',
  },
  'a load balancer without a port: the API server port': {
    loadBalancerEndpoint: 'lb.example',
    want: `lb.example:${API_SERVER_PORT}`,
  },
  'IPv6 with a port': { loadBalancerEndpoint: '[fd00::100]:443', want: '[fd00::100]:443' },
  'no load balancer: this control plane': { want: `10.0.0.1:${API_SERVER_PORT}` },
}

/** HOST:PORT with kubeadm's rule for a bare host, so that both sides compare as endpoints. */
function endpointOf(text: string): string {
  const { host, port } = parseHostPort(text)
  return formatHostPort(host, port ?? API_SERVER_PORT)
}

/** controlPlaneEndpoint as the real init gives it to kubeadm init. */
async function initEndpoint(metadata: EndpointMetadata): Promise<string> {
  const secret = Buffer.from('init-secret-0123456789abcdef0123')
  const { dir, cleanup } = await makeTempDir()
  try {
    let endpoint = ''
    const req = InitRequest.fromPartial({
      kmsUri: clusterKmsUri({ key: Buffer.alloc(32, 1), salt: Buffer.alloc(32, 2) }),
      storageUri: 'storage://no-store',
      measurementSalt: Buffer.alloc(32, 3),
      kubernetesVersion: 'v1.31.13',
      initSecret: secret,
    })
    await initializeNode(req, {
      initSecretHash: await hashInitSecret(secret, 4),
      nodeLock: new NodeLock({ extendPcr: () => Promise.resolve() }),
      onLocked: () => {},
      disk: {
        uuid: () => Promise.resolve('0a1b2c3d-0000-0000-0000-000000000000'),
        changeKey: () => Promise.resolve(),
        writeMark: () => Promise.resolve(),
      },
      paths: nodePaths(dir),
      self,
      loadBalancerEndpoint: metadata.loadBalancerEndpoint,
      stageComponents: () =>
        Promise.resolve({ install: () => Promise.resolve(), discard: () => Promise.resolve() }),
      kubeadmInit: (input) => {
        endpoint = input.controlPlaneEndpoint
        return Promise.resolve(Buffer.from('kubeconfig'))
      },
      log: silentLogger,
    })
    return endpoint
  } finally {
    await cleanup()
  }
}

/** api_server_endpoint of a real ticket, the join service given the endpoint as its wiring gives it. */
async function ticketEndpoint(metadata: EndpointMetadata): Promise<string> {
  const ca = await makeClusterCa()
  const peer = {
    node: 'worker-1',
    role: 'worker' as const,
    address: '10.0.0.5',
    tpm: `000b${'aa'.repeat(32)}`,
  }
  const req = {
    diskUuid: '0b4f5e2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b',
    certificateRequest: encodeFakeCsr(await nodeCsr(peer.node, peer.address, {})),
    isControlPlane: false,
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
  }
  const ticket = await issueJoinTicket(checkJoinRequest(req, peer, { parseCsr: fakeCsrParser }), {
    dataKeys: realDataKeys(),
    tokens: new FakeTokenIssuer(),
    kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
    ca,
    controlPlaneServiceFiles: serviceFiles,
    kubernetes: async () => ({ version: 'v1.31.13', components: COMPONENTS }),
    measurementSalt: MEASUREMENT_SALT,
    stateDisks: new InMemoryStateDisks(),
    apiServerEndpoint: apiServerEndpoint(metadata),
    clock: () => new Date(),
  })
  return ticket.apiServerEndpoint
}

describe('contract: the API server endpoint init and the join service name', () => {
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const metadata = { self, loadBalancerEndpoint: tc.loadBalancerEndpoint }
      const [init, ticket] = await Promise.all([initEndpoint(metadata), ticketEndpoint(metadata)])
      expect(ticket).to.equal(tc.want)
      expect(endpointOf(init)).to.equal(tc.want)
      expect(init).to.equal(controlPlaneEndpoint(metadata))
    })
})
