/**
 * Every node daemon, as src/wiring builds it for production, attests the same way: its attestation
 * carries the boot's TCG event log when the node has one (Constellation's validators replay it).
 */
import { randomBytes } from 'node:crypto'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import { createValidator, type Validator } from '../../src/lib/attestation/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import { LogCollector, type BootstrapperConfig } from '../../src/lib/bootstrapper/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { EVENT_TYPES } from '../../src/lib/attestation/eventlog/describe.js'
import { encodeEventLog } from '../../src/lib/attestation/eventlog/write.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { createNodeBootstrapper } from '../../src/wiring/bootstrapper.js'
import { createVerifyService } from '../../src/wiring/verify-service.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { decodeDocument, type AttestationDocument } from '../../src/lib/attestation/document.js'
import { silentLogger } from '../../src/lib/system/logger.js'

interface Daemon {
  start(): Promise<string>
  stop(graceMs?: number): Promise<void>
}

function nodeConfig(tpm: SwtpmHandle, root: string): BootstrapperConfig {
  return {
    attestationVariant: 'qemu-vtpm',
    tpm: { swtpm: tpm.endpoint },
    root,
    initServer: { listen: '127.0.0.1:0' },
    verifyService: { listen: '127.0.0.1:0' },
    keyService: { listen: '127.0.0.1:0' },
    recoveryServer: { listen: '127.0.0.1:0' },
    kubeconfig: path.join(root, 'etc/kubernetes/admin.conf'),
    initSecretHash: '$2b$04$unused',
    kubeadm: path.join(root, 'run/state/bin/kubeadm'),
    // no disk: the bootstrapper only warns until an Init needs it
    stateDisk: { device: path.join(root, 'no-state-disk') },
    metadata: {
      provider: 'static',
      self: { name: 'cp_0', role: 'control-plane', vpcIP: '127.0.0.1' },
      peers: [],
    },
  }
}

const daemons: Record<string, (config: BootstrapperConfig) => Daemon> = {
  'bootstrap run (Init server)': (config) => createNodeBootstrapper(config, new LogCollector(), silentLogger),
  verifyservice: (config) => createVerifyService(config, silentLogger),
}

/** Connects once through aTLS and returns the attestation document the node presented. */
async function attestationOf(address: string, tpm: SwtpmHandle): Promise<AttestationDocument> {
  const pcrs = await readPcrs(tpm.open, [15])
  const real = createValidator(
    'qemu-vtpm',
    new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }])),
  )
  const seen: Buffer[] = []
  const spyValidator: Validator = {
    variant: real.variant,
    oid: real.oid,
    validate: (doc, nonce) => {
      seen.push(doc)
      return real.validate(doc, nonce)
    },
  }
  const client = new grpc.Client(address, createAttestedChannelCredentials({ validators: [spyValidator] }))
  try {
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + 20_000, (err) => (err ? reject(err) : resolve())),
    )
  } finally {
    client.close()
  }
  const [doc] = seen
  if (!doc) throw new Error('the node presented no attestation')
  return decodeDocument(doc)
}

describe('node daemons from src/wiring: the attestation carries the TPM event log', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let dir: string
  let cleanup: () => Promise<void>
  before(async () => {
    tpm = await startSwtpm()
    ;({ dir, cleanup } = await makeTempDir())
  })
  after(async () => {
    await tpm.stop()
    await cleanup()
  })

  for (const [name, create] of Object.entries(daemons)) {
    for (const present of [true, false]) {
      it(`${name}: ${present ? 'attaches the event log the node has' : 'attaches none when the node has none'}`, async () => {
        const root = path.join(dir, `${name.replace(/\W+/g, '-')}-${present}`)
        // a log the validator can replay whatever the shared TPM's PCRs hold: no event extends one
        const eventLog = encodeEventLog([
          { pcr: 0, type: EVENT_TYPES.EV_NO_ACTION, data: randomBytes(512), digest: Buffer.alloc(32) },
        ])
        const file = nodePaths(root).tpmEventLog
        await mkdir(path.dirname(file), { recursive: true })
        if (present) await writeFile(file, eventLog)
        else await rm(file, { force: true })
        const daemon = create(nodeConfig(tpm, root))
        try {
          const doc = await attestationOf(await daemon.start(), tpm)
          expect(doc.eventLog).to.deep.equal(present ? eventLog : undefined)
        } finally {
          await daemon.stop(1_000)
        }
      })
    }
  }
})
