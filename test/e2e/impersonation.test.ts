/**
 * The join service as an attacker probes it (issue 28): a process with a fresh swtpm passes qemu-vtpm
 * attestation with the genuine measurements (a fresh TPM shows what a fresh node shows), so
 * attestation alone proves nothing about *who* asks. Each attack here runs against the real join
 * service process of a running cluster, over the wire, from loopback addresses the attacker binds:
 * an address the metadata does not list, a genuine but different member, a member at another
 * node's address with a TPM of its own. Who may get what (docs/protocol.md, "the join service's
 * rules"): a join ticket only to the instance the metadata lists at the caller's address, for a new
 * disk, with the role the metadata gives; a rejoin only for the disk recorded for that node, at
 * that address, with that TPM.
 *
 * Slow (about 10 s): a cluster is initialized and a worker joins through `bootstrap run` processes
 * before the attacks, so that there are real disks and records to aim at; the attacks then share it.
 */
import * as grpc from '@grpc/grpc-js'
import {
  APIClient,
  type IssueJoinTicketResponse,
  type IssueRejoinTicketResponse,
} from '../../src/gen/join.js'
import { createIssuer, type Issuer } from '../../src/lib/attestation/index.js'
import { clientOn, openAttestedClientChannel } from '../../src/lib/atls/index.js'
import { CONTROL_PLANE_LEASE } from '../../src/lib/joinservice/control-plane-turns.js'
import { readNodeState } from '../../src/lib/nodeconfig/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { genuineJoinRequest } from '../support/join-request.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import {
  initFirstControlPlane,
  joinAuditLines,
  startTestCluster,
  type ClusterNode,
  type TestCluster,
} from '../support/test-cluster.js'

/** An address no instance of the cluster has. */
const STRANGER = '127.0.0.77'

describe('impersonation: attested callers that claim another node, disk or role get nothing (CLI processes)', function () {
  this.timeout(300_000)
  let cluster: TestCluster
  let cp0: ClusterNode
  let worker0: ClusterNode
  let worker1: ClusterNode
  let fresh: SwtpmHandle
  let attacker: Issuer
  let disks: { cp0: string; worker0: string }
  before(async () => {
    cluster = await startTestCluster()
    cp0 = await initFirstControlPlane(cluster)
    worker0 = await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] })
    const joined = await (await worker0.start()).exited
    expect(joined.code, joined.stderr + joined.stdout).to.equal(0)
    // a member of the cluster that has not joined yet: the metadata lists it, it may join once
    worker1 = await cluster.addNode({ name: 'worker_1', role: 'worker', peers: [cp0.member] })
    fresh = await startSwtpm()
    attacker = createIssuer('qemu-vtpm', fresh.open)
    disks = {
      cp0: (await readNodeState(nodePaths(cp0.local.root))).diskUuid ?? '',
      worker0: (await readNodeState(nodePaths(worker0.local.root))).diskUuid ?? '',
    }
  })
  after(async () => {
    await fresh?.stop()
    await cluster?.stop()
  })

  const target = () => `127.0.0.1:${cluster.joinPort}`
  /** One attested call from `from`, as the attacker's process would make it. */
  async function call<Res>(
    from: string,
    issuer: Issuer,
    invoke: (client: APIClient, done: (err: grpc.ServiceError | null, res: Res) => void) => void,
  ): Promise<Res | grpc.ServiceError> {
    const channel = await openAttestedClientChannel(target(), issuer, {
      deadlineMs: 10_000,
      localAddress: from,
    })
    try {
      return await new Promise<Res | grpc.ServiceError>((resolve) =>
        invoke(clientOn(channel, APIClient), (err, res) => resolve(err ?? res)),
      )
    } finally {
      channel.close()
    }
  }
  const options = () => ({ deadline: Date.now() + 30_000 })
  const rejoin = (from: string, issuer: Issuer, diskUuid: string) =>
    call<IssueRejoinTicketResponse>(from, issuer, (c, done) =>
      c.issueRejoinTicket({ diskUuid }, new grpc.Metadata(), options(), done),
    )
  const join = async (
    from: string,
    issuer: Issuer,
    claim: { name: string; ip: string; diskUuid?: string; isControlPlane?: boolean },
  ) => {
    const request = await genuineJoinRequest(claim.name, claim.ip)
    return call<IssueJoinTicketResponse>(from, issuer, (c, done) =>
      c.issueJoinTicket(
        {
          ...request,
          diskUuid: claim.diskUuid ?? request.diskUuid,
          isControlPlane: claim.isControlPlane ?? false,
        },
        new grpc.Metadata(),
        options(),
        done,
      ),
    )
  }
  function expectDenied(outcome: unknown, details: RegExp): void {
    expect(outcome, 'no ticket').to.be.instanceOf(Error)
    const err = outcome as grpc.ServiceError
    expect(err.code, err.details).to.equal(grpc.status.PERMISSION_DENIED)
    expect(err.details).to.match(details)
  }
  const record = (uuid: string) =>
    cluster.api.get('v1', 'configmaps', `constellation-state-disk-${uuid}`, 'kube-system')?.data

  it("a fresh swtpm at an address the metadata does not list: no disk key, no kubelet certificate in another's name", async () => {
    expectDenied(
      await rejoin(STRANGER, attacker, disks.worker0),
      /^peer address 127\.0\.0\.77: the cluster's metadata lists no instance there/,
    )
    expectDenied(
      await join(STRANGER, attacker, { name: 'worker-0', ip: STRANGER }),
      /lists no instance there; only its members may join/,
    )
    expectDenied(
      await join(STRANGER, attacker, { name: 'cp-9', ip: STRANGER, isControlPlane: true }),
      /lists no instance there/,
    )
    // nobody took the cluster's control-plane turn
    const lease = cluster.api.get('coordination.k8s.io/v1', 'leases', CONTROL_PLANE_LEASE.name, 'kube-system')
    expect(lease, 'no control-plane turn taken').to.equal(undefined)
  })

  it("a genuine but different member (worker_1): not worker-0's disk by rejoin or by join, not a control plane's secrets", async () => {
    const from = worker1.member.vpcIP
    const genuine1 = createIssuer('qemu-vtpm', worker1.local.swtpm.open)
    expectDenied(
      await rejoin(from, genuine1, disks.worker0),
      /is the state disk of node "worker-0", not of "worker-1"/,
    )
    expectDenied(
      await join(from, genuine1, { name: 'worker-1', ip: from, diskUuid: disks.worker0 }),
      /is the state disk of node "worker-0" already; a join is for a new disk/,
    )
    expect(record(disks.worker0), "worker-0's record is not rewritten").to.deep.include({ node: 'worker-0' })
    expectDenied(
      await join(from, genuine1, { name: 'worker-1', ip: from, isControlPlane: true }),
      /^is_control_plane: true, but the cluster's metadata lists 127\.0\.9\.\d+ as worker "worker-1"$/,
    )
    expectDenied(
      await join(from, genuine1, { name: 'worker-0', ip: from }),
      /subject CN: node name "worker-0"; this node is "worker-1"/,
    )
  })

  it("a fresh swtpm at a node's own address: neither the worker's nor the control plane's disk key", async () => {
    expectDenied(
      await rejoin(worker0.member.vpcIP, attacker, disks.worker0),
      /was recorded with another TPM .*; this node attested with/,
    )
    expectDenied(await rejoin(cp0.member.vpcIP, attacker, disks.cp0), /was recorded with another TPM/)
  })

  it('after all that, the genuine nodes are served: worker-0 rejoins after a reboot, worker_1 joins', async () => {
    await worker0.reboot() // its TPM's PCRs reset, as a rebooted node asks
    const genuine0 = createIssuer('qemu-vtpm', worker0.local.swtpm.open)
    const ticket = await rejoin(worker0.member.vpcIP, genuine0, disks.worker0)
    expect(ticket).to.not.be.instanceOf(Error)
    expect((ticket as IssueRejoinTicketResponse).stateDiskKey).to.have.length(32)
    const joined = await (await worker1.start()).exited
    expect(joined.code, joined.stderr + joined.stdout).to.equal(0)
    const audit = await joinAuditLines(cp0)
    expect(audit.filter((l) => l.verdict === 'ok').map((l) => [l.rpc, l.node])).to.deep.equal([
      ['IssueJoinTicket', 'worker-0'],
      ['IssueRejoinTicket', 'worker-0'],
      ['IssueJoinTicket', 'worker-1'],
    ])
    expect(audit.filter((l) => l.verdict === 'refused')).to.have.length(9)
    // one record per node, each naming its own node: the attacks left none behind
    const records = cluster.api
      .list('v1', 'configmaps', 'kube-system')
      .filter((cm) => cm.metadata.name.startsWith('constellation-state-disk-'))
      .map((cm) => (cm.data as { node: string }).node)
      .sort()
    expect(records).to.deep.equal(['cp-0', 'worker-0', 'worker-1'])
  })
})
