/**
 * clusterStatus' order of work on injected parts (the real API, helm and verification services run
 * in status-cli.test.ts): the nodes are verified while helm still lists the releases.
 */
import { clusterStatus, type StatusDeps } from '../../src/lib/status/index.js'
import { expect } from '../support/chai.js'

describe('clusterStatus', () => {
  it('verifies the nodes while helm lists the releases, and reports both', async () => {
    const verified: string[] = []
    let firstVerify = () => {}
    const verifying = new Promise<void>((resolve) => (firstVerify = resolve))
    const deps: StatusDeps = {
      variant: 'qemu-vtpm',
      verifyPort: 30081,
      readCluster: async () => ({
        kubernetesVersion: 'v1.31.13',
        nodes: [{ name: 'control-plane-0', roles: ['control-plane'], internalIP: '10.0.0.2', ready: true }],
      }),
      verify: async (endpoint) => {
        verified.push(endpoint)
        firstVerify()
        return { error: { message: 'measurement 4 differs', unreachable: false } }
      },
      // answers only once a node is being verified: a status that waited for helm first never would
      releases: async () => {
        await verifying
        return [
          { name: 'cilium', namespace: 'kube-system', version: '1.0.0', status: 'deployed', revision: 1 },
        ]
      },
    }
    const report = await clusterStatus(deps)
    expect(verified).to.deep.equal(['10.0.0.2:30081'])
    expect(report.nodes[0]).to.deep.include({ name: 'control-plane-0', attestation: 'untrusted' })
    expect(report.releases).to.deep.equal([
      { name: 'cilium', namespace: 'kube-system', version: '1.0.0', status: 'deployed' },
    ])
  })
})
