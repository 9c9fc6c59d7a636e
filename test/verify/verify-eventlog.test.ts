import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { parseNodeConfig } from '../../src/lib/nodeconfig/node-config.js'
import { nodePaths } from '../../src/lib/paths.js'
import { createLogger } from '../../src/lib/system/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { EVENT_TYPES as T } from '../../src/lib/attestation/eventlog/describe.js'
import {
  encodeEventLog,
  measureBoot,
  type BootMeasurement,
} from '../../src/lib/attestation/eventlog/write.js'
import { ExitCode } from '../../src/lib/errors/index.js'
import { renderVerifyReport, verifyNode, type VerifyServiceDaemon } from '../../src/lib/verify/index.js'
import { createVerifyService } from '../../src/wiring/verify-service.js'

const BOOT: BootMeasurement[] = [
  { pcr: 4, type: T.EV_SEPARATOR, data: Buffer.alloc(4) },
  { pcr: 4, type: T.EV_IPL, data: Buffer.from('boot loader\0') },
  { pcr: 8, type: T.EV_IPL, data: Buffer.from('console=ttyS0\0') },
]

describe('verify shows the replayed event log; --raw keeps the document', function () {
  let tpm: SwtpmHandle
  let tmp: TempDir
  let daemon: VerifyServiceDaemon
  let endpoint: string
  let logFile: string
  beforeEach(async () => {
    tpm = await startSwtpm()
    tmp = await makeTempDir()
    logFile = nodePaths(tmp.dir).tpmEventLog
    const port = await freePort()
    const config = parseNodeConfig(
      `attestationVariant: qemu-vtpm\nroot: "${tmp.dir}"\ntpm: {swtpm: "${tpm.endpoint}"}\nverifyService: {listen: "127.0.0.1:${port}"}\n`,
      'node.yaml',
    )
    daemon = createVerifyService(config, createLogger({ format: 'json', write: () => undefined }))
    endpoint = await daemon.start()
  })
  afterEach(async () => {
    await daemon.stop(1000)
    await tpm.stop()
    await tmp.cleanup()
  })
  const measurements = async () =>
    new Map([...(await readPcrs(tpm.open, [4, 8]))].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
  const writeLog = async (log: Buffer) => {
    await mkdir(path.dirname(logFile), { recursive: true })
    await writeFile(logFile, log)
  }

  it('lists the events per PCR and summarises them; --raw gets the document', async () => {
    await writeLog(await measureBoot(tpm.open, BOOT))
    const saved: Buffer[] = []
    const { report, error } = await verifyNode({
      endpoint,
      variant: 'qemu-vtpm',
      measurements: await measurements(),
      saveDocument: async (doc) => void saved.push(doc),
    })
    expect(error).to.equal(undefined)
    expect(report?.eventLog).to.deep.include({ replayed: true, bank: 'SHA-256' })
    const log = report?.eventLog
    if (!log?.replayed) throw new Error('no replay')
    expect(log.pcrs.map((p) => [p.index, p.replayed, p.events.map((e) => e.description)])).to.deep.equal([
      [4, true, ['separator', 'boot loader']],
      [8, true, ['console=ttyS0']],
    ])
    expect(renderVerifyReport(report!)).to.include(
      'Event log (SHA-256): replayed ok for PCRs 4, 8; events per PCR: PCR 4: 2, PCR 8: 1',
    )
    expect(saved).to.have.length(1)
    expect(JSON.parse(saved[0]!.toString())).to.have.nested.property('Attestation.event_log')
  })

  it('says nothing was replayed for a node without a log, and trusts it on its measurements', async () => {
    await measureBoot(tpm.open, BOOT)
    const { report } = await verifyNode({
      endpoint,
      variant: 'qemu-vtpm',
      measurements: await measurements(),
    })
    expect(report?.trusted).to.equal(true)
    expect(report?.eventLog).to.deep.equal({
      replayed: false,
      reason: 'the node sent no event log: nothing was replayed',
    })
    expect(renderVerifyReport(report!)).to.include(
      'Event log: the node sent no event log: nothing was replayed.',
    )
  })

  it('refuses (exit 4) a log that does not replay, naming the PCR, and --raw still keeps the document', async () => {
    await measureBoot(tpm.open, BOOT)
    await writeLog(encodeEventLog(BOOT.slice(1))) // PCR 4's separator left out
    const saved: Buffer[] = []
    const { error } = await verifyNode({
      endpoint,
      variant: 'qemu-vtpm',
      measurements: await measurements(),
      saveDocument: async (doc) => void saved.push(doc),
    })
    expect(error?.exitCode).to.equal(ExitCode.AttestationFailed)
    expect(error?.message).to.match(
      /event log does not reproduce the quoted PCR 4: replayed [0-9a-f]{64}, quoted [0-9a-f]{64}/,
    )
    expect(saved).to.have.length(1)
  })
})
