/**
 * The confidential-VM variants end to end on `mini` (issue 31): every node's supervisor serves its
 * SEV-SNP reports or TDX quotes at the node's configfs-tsm directory from the cluster's STAND-IN
 * AMD or Intel (no CVM hardware here), and the real CLI processes run init, joins, verify and
 * status through it. Then the refusal paths over the wire: a node whose reports come from another
 * vendor root than the one pinned, and a debug guest, each refused by the running join service
 * naming why; a config expecting another launch measurement or MRTD makes verify exit 4 naming the
 * field, the expected and the found value.
 *
 * Slow (about 5–15 s each): each case boots a cluster, and its steps depend on the cluster; the
 * SEV-SNP case also reboots a worker, which rejoins through the stand-in.
 */
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import { APIClient, type IssueJoinTicketResponse } from '../../src/gen/join.js'
import { createIssuer, type CvmHardware, type Issuer } from '../../src/lib/attestation/index.js'
import { clientOn, openAttestedClientChannel } from '../../src/lib/atls/index.js'
import {
  createSnpStandIn,
  createTdxStandIn,
  loadSnpStandIn,
  loadTdxStandIn,
} from '../../src/lib/cvm-standin/index.js'
import { readMiniRecord } from '../../src/lib/mini/index.js'
import { miniPaths } from '../../src/lib/mini/layout.js'
import { STANDIN_LAUNCH_MEASUREMENT } from '../../src/lib/mini/cvm.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { genuineJoinRequest } from '../support/join-request.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir } from '../support/temp.js'

interface UpJson {
  nodes: Array<{ name: string; role: string; address: string }>
  status: { healthy: boolean; nodes: Array<{ name: string; attestation: string; hardware?: string }> }
}

describe('constellation mini with confidential-VM variants through the stand-in hardware (CLI processes)', function () {
  this.timeout(300_000)
  let dir: string
  let cleanup: () => Promise<void>
  let tpm: SwtpmHandle
  before(async () => {
    tpm = await startSwtpm()
  })
  after(async () => tpm.stop())
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir('constell-mini-cvm-'))
  })
  afterEach(async () => {
    await runCli(['mini', 'down', '-C', path.join(dir, 'ws'), '--purge'], { timeoutMs: 60_000 })
    await cleanup()
  })

  async function up(variant: string): Promise<UpJson> {
    const ws = path.join(dir, 'ws')
    const result = await runCli(
      [
        'mini',
        'up',
        '-C',
        ws,
        '-a',
        variant,
        '--control-planes',
        '1',
        '--workers',
        '1',
        '--skip-helm',
        '--json',
      ],
      { timeoutMs: 120_000 },
    )
    expect(result.code, result.stderr + result.stdout).to.equal(0)
    expect(result.stderr).to.match(
      new RegExp(`attestation ${variant}: a STAND-IN (AMD|Intel) for the cluster`),
    )
    const json = JSON.parse(result.stdout) as UpJson
    expect(json.status.healthy).to.equal(true)
    for (const node of json.status.nodes) {
      expect(node.attestation, node.name).to.equal('trusted')
      expect(node.hardware, node.name).to.match(/STAND-IN root, not (AMD|Intel)'s/)
    }
    return json
  }

  /** An attested IssueJoinTicket from a process of its own, as worker-0 would send it. */
  async function joinAs(
    cluster: UpJson,
    issuer: Issuer,
  ): Promise<IssueJoinTicketResponse | grpc.ServiceError> {
    const cp0 = cluster.nodes[0]!
    const worker = cluster.nodes[1]!
    const target = `${cp0.address}:30090`
    let channel: grpc.Channel
    try {
      channel = await openAttestedClientChannel(target, issuer)
    } catch (err) {
      return err as grpc.ServiceError // refused at Attest, before any other call
    }
    const request = await genuineJoinRequest(worker.name, worker.address)
    try {
      return await new Promise((resolve) =>
        clientOn(channel, APIClient).issueJoinTicket(
          request,
          new grpc.Metadata(),
          { deadline: Date.now() + 30_000 },
          (err, res) => resolve(err ?? res),
        ),
      )
    } finally {
      channel.close()
    }
  }

  /** As with every variant, a refused attestation ends the call before any handler runs (docs/protocol.md §7). */
  function expectRefused(outcome: unknown, reason: RegExp): void {
    expect(outcome, 'no ticket').to.be.instanceOf(Error)
    const err = outcome as grpc.ServiceError
    expect(err.code, err.details).to.equal(grpc.status.UNAUTHENTICATED)
    expect(err.details).to.match(/^attestation refused: /)
    expect(err.details).to.match(reason)
  }

  async function editConfig(edit: (text: string) => string): Promise<void> {
    const file = path.join(dir, 'ws', 'constellation-conf.yaml')
    await writeFile(file, edit(await readFile(file, 'utf8')))
  }

  it('gcp-sev-snp: init, join, verify and status through the stand-in AMD; another root, a debug guest and another launch measurement refused', async () => {
    const cluster = await up('gcp-sev-snp')
    const ws = path.join(dir, 'ws')
    const verify = await runCli(['verify', '-C', ws, '--json'])
    expect(verify.code, verify.stderr + verify.stdout).to.equal(0)
    const report = JSON.parse(verify.stdout) as {
      hardware?: { kind: string; vendorRoot: boolean; fields: Record<string, string> }
    }
    expect(report.hardware).to.nested.include({ kind: 'snp', vendorRoot: false, 'fields.signer': 'VCEK' })
    expect(report.hardware?.fields.measurement).to.equal(STANDIN_LAUNCH_MEASUREMENT.toString('hex'))
    // a reboot: the supervisor brings the stand-in up with the node, and the worker rejoins attested
    const reboot = await runCli(['mini', 'reboot', 'worker-0', '-C', ws], { timeoutMs: 120_000 })
    expect(reboot.code, reboot.stdout + reboot.stderr).to.equal(0)

    // the cluster's own stand-in: what a genuine CVM of this cluster would report
    const genuine = await loadSnpStandIn(miniPaths(ws).cvmStandIn.keys)
    const hardware = (report: (reportData: Buffer) => Buffer, table: () => Buffer): CvmHardware => ({
      report: async (reportData) => ({ outblob: report(reportData), auxblob: table() }),
    })
    const foreign = await createSnpStandIn({ signer: 'VCEK' })
    const fromForeign = createIssuer('gcp-sev-snp', tpm.open, {
      cvm: hardware(
        (reportData) => foreign.report({ reportData, measurement: STANDIN_LAUNCH_MEASUREMENT }),
        () => foreign.certificateTable(),
      ),
    })
    expectRefused(await joinAs(cluster, fromForeign), /ARK|root|pinned/i)
    const debug = createIssuer('gcp-sev-snp', tpm.open, {
      cvm: hardware(
        (reportData) =>
          genuine.report({
            reportData,
            measurement: STANDIN_LAUNCH_MEASUREMENT,
            policy: 0x20000n | (1n << 19n),
          }),
        () => genuine.certificateTable(),
      ),
    })
    expectRefused(await joinAs(cluster, debug), /DEBUG/)

    const other = randomBytes(48).toString('hex')
    await editConfig((t) => t.replace(/launchMeasurement: .*/, `launchMeasurement: ${other}`))
    const refused = await runCli(['verify', '-C', ws])
    expect(refused.code, refused.stdout + refused.stderr).to.equal(4)
    expect(refused.stdout + refused.stderr).to.match(
      new RegExp(`MEASUREMENT: expected ${other}, found ${STANDIN_LAUNCH_MEASUREMENT.toString('hex')}`),
    )
    const status = await runCli(['status', '-C', ws])
    expect(status.stdout).to.match(/untrusted/)

    const record = (await readMiniRecord(ws))!
    expect(record.attestation).to.equal('gcp-sev-snp')
  })

  it('aws-sev-snp: init, join and verify through the stand-in AMD, whose reports AWS-style sign with a VLEK', async () => {
    await up('aws-sev-snp')
    const verify = await runCli(['verify', '-C', path.join(dir, 'ws'), '--json'])
    expect(verify.code, verify.stderr + verify.stdout).to.equal(0)
    expect(JSON.parse(verify.stdout)).to.nested.include({
      'hardware.vendorRoot': false,
      'hardware.fields.signer': 'VLEK',
    })
  })

  it('qemu-tdx: init, join, verify (TCB status from collateral) through the stand-in Intel; another root and another MRTD refused', async () => {
    const cluster = await up('qemu-tdx')
    const ws = path.join(dir, 'ws')
    const verify = await runCli(['verify', '-C', ws])
    expect(verify.code, verify.stderr + verify.stdout).to.equal(0)
    expect(verify.stdout).to.match(/^Hardware: the TDX quote chains to a STAND-IN root, not Intel's/m)
    expect(verify.stdout).to.match(/tcbStatus: UpToDate/)

    const genuine = await loadTdxStandIn(miniPaths(ws).cvmStandIn.keys)
    const foreign = await createTdxStandIn()
    const quoteFrom = (intel: typeof genuine): CvmHardware => ({
      report: async (reportData) => ({ outblob: intel.quote({ reportData }) }),
    })
    expectRefused(
      await joinAs(cluster, createIssuer('qemu-tdx', tpm.open, { cvm: quoteFrom(foreign) })),
      /root|pinned/i,
    )
    const debug: CvmHardware = {
      report: async (reportData) => ({
        outblob: genuine.quote({ reportData, tdAttributes: Buffer.from('0100000000000000', 'hex') }),
      }),
    }
    expectRefused(await joinAs(cluster, createIssuer('qemu-tdx', tpm.open, { cvm: debug })), /DEBUG/)

    const mrTd = randomBytes(48).toString('hex')
    await editConfig((t) => t.replace(/mrTd: .*/, `mrTd: ${mrTd}`))
    const refused = await runCli(['verify', '-C', ws])
    expect(refused.code, refused.stdout + refused.stderr).to.equal(4)
    expect(refused.stdout + refused.stderr).to.match(new RegExp(`MRTD: expected ${mrTd}, found [0-9a-f]{96}`))
  })
})
