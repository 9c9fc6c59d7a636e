/**
 * Nodes of a running mini cluster, end to end as CLI processes: `mini add` boots a new worker that
 * joins through the join service; `node remove` retires it (drain, the Node, its disk record and
 * tokens) so that its disk is refused when it asks to rejoin, while another worker still rejoins;
 * the only control plane cannot be removed; `mini down` leaves nothing. Kubernetes is SIMULATED by
 * the contract fakes (tpm-ek, loopback addresses, no Helm releases: the nodes are what is tested).
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { readMiniRecord } from '../../src/lib/mini/index.js'
import { CLUSTER_MARKER, markedProcesses } from '../../src/lib/mini/daemons.js'
import { miniPaths, type MiniRecord } from '../../src/lib/mini/layout.js'
import { expect } from '../support/chai.js'
import { runCli, type CliResult } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

interface StatusJson {
  healthy: boolean
  nodes: Array<{ name: string; attestation: string; kubernetes?: { ready: boolean } }>
}

const ok = (r: CliResult, what: string) => expect(r.code, `${what}: ${r.stdout}\n${r.stderr}`).to.equal(0)

describe('constellation mini: nodes added to and removed from a running cluster (CLI processes)', function () {
  this.timeout(180_000)
  let dir: string
  let ws: string
  let cleanup: () => Promise<void>
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir('constell-nodes-'))
    ws = path.join(dir, 'ws')
  })
  afterEach(async () => {
    await runCli(['mini', 'down', '-C', ws, '--purge'], { timeoutMs: 60_000 })
    await cleanup()
  })

  it('mini add joins a worker; node remove retires it (its rejoin refused, another worker rejoins); the only control plane stays; down leaves nothing', async () => {
    const cli = (args: string[], timeoutMs = 60_000) => runCli([...args, '-C', ws], { timeoutMs })
    ok(
      await cli(
        ['mini', 'up', '--control-planes', '1', '--workers', '1', '--network', 'loopback', '--skip-helm'],
        120_000,
      ),
      'mini up',
    )
    const record = (await readMiniRecord(ws)) as MiniRecord

    // 1. a new worker: the next address, its own TPM, listed by the metadata service, joined
    const add = await cli(['mini', 'add', 'worker-1', '--role', 'worker', '--json'])
    ok(add, 'mini add')
    expect(add.stderr).to.include('Kubernetes is SIMULATED')
    const added = (JSON.parse(add.stdout) as { node: { name: string; address: string } }).node
    expect(added).to.deep.include({ name: 'worker-1', address: `${record.network.prefix}.4` })
    expect((await readMiniRecord(ws))?.nodes.map((n) => n.name)).to.deep.equal([
      'control-plane-0',
      'worker-0',
      'worker-1',
    ])
    const status = await cli(['status', '--json'])
    ok(status, 'status')
    const report = JSON.parse(status.stdout) as StatusJson
    expect(report.nodes.map((n) => n.name)).to.have.members(['control-plane-0', 'worker-0', 'worker-1'])
    for (const n of report.nodes) expect(n.kubernetes?.ready, n.name).to.equal(true)
    expect(report.healthy).to.equal(true)

    // 2. worker-1 retired: without a terminal and --yes it is refused (exit 2), then removed
    const unconfirmed = await cli(['node', 'remove', 'worker-1'])
    expect(unconfirmed.code).to.equal(2)
    expect(unconfirmed.stderr).to.include('refusing to remove worker-1 without confirmation')
    const remove = await cli(['node', 'remove', 'worker-1', '--yes', '--json'])
    ok(remove, 'node remove')
    expect(remove.stderr).to.include('Kubernetes is SIMULATED')
    expect(remove.stderr).to.include('Removing worker worker-1 from the cluster at https://')
    const removal = JSON.parse(remove.stdout) as {
      report: { nodeDeleted: boolean; diskRecordsDeleted: string[]; bootstrapTokensDeleted: string[] }
    }
    expect(removal.report.nodeDeleted).to.equal(true)
    expect(removal.report.diskRecordsDeleted).to.have.length(1)
    expect(removal.report.bootstrapTokensDeleted).to.have.length(1)

    // 3. its disk asks to rejoin and is refused; worker-0's still rejoins
    const refused = await cli(['mini', 'reboot', 'worker-1', '--timeout', '6s'])
    expect(refused.code).to.equal(1)
    expect(refused.stderr, refused.stderr).to.match(
      /refused it: disk_uuid: [0-9a-f-]+ is not a state disk of this cluster \(no node joined with it\)/,
    )
    // the join service's audit: a refusal (PERMISSION_DENIED, docs/protocol.md) of worker-1's rejoin
    const joinLog = await readFile(
      path.join(miniPaths(ws).node('control-plane-0').unitState, 'constellation-joinservice.service.log'),
      'utf8',
    )
    const audit = joinLog
      .split('\n')
      .filter((l) => l.includes('"joinservice.audit"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(audit.find((a) => a.rpc === 'IssueRejoinTicket' && a.node === 'worker-1')).to.include({
      verdict: 'refused',
    })
    ok(await cli(['mini', 'reboot', 'worker-0']), 'mini reboot worker-0')

    // 4. the only control plane: refused, nothing changed
    const last = await cli(['mini', 'remove', 'control-plane-0', '--yes'])
    expect(last.code).to.equal(1)
    expect(last.stderr).to.include(
      "refusing to remove control-plane-0: it is the cluster's last control plane",
    )
    expect((await readMiniRecord(ws))?.nodes.map((n) => n.name)).to.include('control-plane-0')

    // 5. mini remove retires worker-1's machine: powered off, its files gone, the record without it
    const retire = await cli(['mini', 'remove', 'worker-1', '--yes'])
    ok(retire, 'mini remove')
    expect((await readMiniRecord(ws))?.nodes.map((n) => n.name)).to.deep.equal([
      'control-plane-0',
      'worker-0',
    ])
    expect(await readdir(path.join(miniPaths(ws).dir, 'nodes'))).to.deep.equal([
      'control-plane-0',
      'worker-0',
    ])

    ok(await runCli(['mini', 'down', '-C', ws, '--purge']), 'mini down')
    expect(await markedProcesses(CLUSTER_MARKER, record.network.id)).to.deep.equal([])
    expect(
      await stat(ws).then(
        () => 'still there',
        () => 'gone',
      ),
    ).to.equal('gone')
  })
})
