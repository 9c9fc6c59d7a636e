/** joinNode past the node lock: the state disk is re-keyed while kubeadm join runs. */
import { expect } from '../../support/chai.js'
import { NodeLock } from '../../../src/lib/bootstrapper/index.js'
import { joinNode, type JoinPlan } from '../../../src/lib/bootstrapper/join/join-node.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { silentLogger } from '../../../src/lib/system/logger.js'
import { makeTempDir } from '../../support/temp.js'
import { rekeyBesideKubeadm } from '../../support/rekey-beside-kubeadm.js'

const plan = (): JoinPlan => ({
  ticket: {
    diskKey: Buffer.alloc(32, 1),
    measurementSalt: Buffer.alloc(32, 2),
    measurementSecret: Buffer.alloc(32, 3),
    kubeletCertPem: '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n',
    apiServerEndpoint: '10.0.0.1:6443',
    token: 'abcdef.0123456789abcdef',
    caCertHash: `sha256:${'0'.repeat(64)}`,
    controlPlaneFiles: [],
    serviceFiles: [],
    components: [],
    kubernetesVersion: 'v1.31.13',
  },
  controlPlane: false,
  nodeName: 'worker-0',
  nodeIP: '10.0.0.3',
  diskUuid: '0a1b2c3d-0000-0000-0000-000000000000',
  kubeletKeyPem: '-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n',
  staged: { install: () => Promise.resolve(), discard: () => Promise.resolve() },
})

/** Deps whose re-key waits for kubeadm join to start: the join deadlocks if the two run one after the other. */
function overlapping(dir: string, rekey: 'succeeds' | 'fails') {
  const { seen, disk, kubeadm } = rekeyBesideKubeadm(rekey, undefined)
  return {
    seen,
    deps: {
      lock: new NodeLock({ extendPcr: () => Promise.resolve() }),
      onLocked: () => {},
      disk,
      paths: nodePaths(dir),
      kubeadmJoin: kubeadm,
      log: silentLogger,
    },
  }
}

describe('joinNode: the state disk is re-keyed while kubeadm join runs', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  it('both finish: joined once the disk carries its key and mark', async () => {
    const { deps, seen } = overlapping(dir, 'succeeds')
    expect(await joinNode(plan(), deps)).to.equal(true)
    expect(seen).to.deep.equal({ kubeadmStopped: false, kubeadmFinished: true, marked: true })
  })

  it('the re-key fails while kubeadm join runs: kubeadm is stopped and the disk is named as the cause', async () => {
    const { deps, seen } = overlapping(dir, 'fails')
    const err = await joinNode(plan(), deps).then(
      () => undefined,
      (e: unknown) => e as Error,
    )
    expect(`${err?.message}: ${String(err?.cause)}`).to.equal(
      'joining failed after the node lock was taken: setting the state disk key: Error: cryptsetup exited 2',
    )
    expect(seen).to.deep.equal({ kubeadmStopped: true, kubeadmFinished: false, marked: false })
  })
})
