/**
 * Every node config that attested bootstrap data writes must start `bootstrap run` (the built CLI,
 * a real swtpm, a real LUKS2 image): rewritten only to point at this test's TPM, disk, port and
 * root, it is loaded by the daemon's own loader and served until it listens, then stopped.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { freePort, waitForPort } from '../support/ports.js'
import { startSwtpm } from '../support/swtpm.js'
import { createLuksImage } from '../support/luks-image.js'
import { generateBootstrapData, type OutputFormat } from '../../src/lib/bootstrapdata/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { FIXTURES, tempWorkspace, testDeps, testOptions } from './helpers.js'
import { installedNodeConfig } from './node-files.js'

type Member = { vpcIP: string } & Record<string, unknown>
type NodeConfigDoc = Record<string, unknown> & {
  stateDisk?: Record<string, unknown>
  metadata?: Record<string, unknown> & { peers?: Member[]; loadBalancerEndpoint?: string }
}

async function generatedNodeConfigs(format: OutputFormat): Promise<Map<string, string>> {
  const ws = await tempWorkspace(false)
  try {
    const input = await readFile(path.join(FIXTURES, 'attested.yaml'), 'utf8')
    const result = await generateBootstrapData(testOptions(ws.dir, { format }), await testDeps(input))
    const configs = new Map<string, string>()
    for (const m of result.machines)
      configs.set(m.machine, installedNodeConfig(await readFile(m.file, 'utf8')))
    return configs
  } finally {
    await ws.cleanup()
  }
}

describe('attested node configs start bootstrap run (built CLI, swtpm, LUKS2 image)', function () {
  this.timeout(120_000)
  for (const format of ['attested-cloud-config', 'attested-ignition'] as const) {
    it(`${format}: every machine's node config loads and serves until stopped`, async () => {
      const configs = await generatedNodeConfigs(format)
      expect([...configs.keys()]).to.deep.equal(['cp-0', 'worker-0'])
      for (const [machine, text] of configs) await expectServes(machine, parse(text) as NodeConfigDoc)
    })
  }
})

async function expectServes(machine: string, generated: NodeConfigDoc): Promise<void> {
  const tmp = await makeTempDir()
  const swtpm = await startSwtpm()
  try {
    // as state-disk setup leaves a fresh disk: its boot key under the node's root
    const disk = await createLuksImage(tmp.dir, { root: path.join(tmp.dir, 'root') })
    const port = await freePort()
    // Only where the node's devices, port and root are, and its peers on loopback (its JoinClient
    // dials them at once; tests send nothing off this machine); everything else as generated.
    const metadata = generated.metadata && {
      ...generated.metadata,
      peers: generated.metadata.peers?.map((p) => ({ ...p, vpcIP: '127.0.0.1' })),
      ...(generated.metadata.loadBalancerEndpoint
        ? { loadBalancerEndpoint: `127.0.0.1:${await freePort()}` }
        : {}),
    }
    const local = {
      ...generated,
      tpm: { swtpm: swtpm.endpoint },
      root: path.join(tmp.dir, 'root'),
      initServer: { listen: `127.0.0.1:${port}` },
      stateDisk: { ...generated.stateDisk, device: disk.image },
      metadata,
    }
    expect(Object.keys(local), machine).to.deep.equal(Object.keys(generated))
    const file = path.join(tmp.dir, 'node-config.yaml')
    await writeFile(file, stringifyYaml(local))
    const stop = new AbortController()
    let exited = false
    const daemon = runCli(['bootstrap', 'run', '--config', file], { signal: stop.signal }).finally(
      () => (exited = true),
    )
    const listening = await waitForPort(port, { gaveUp: () => exited }).then(
      () => true,
      () => false,
    )
    stop.abort()
    const result = await daemon
    expect(listening, `${machine}: bootstrap run did not listen:\n${result.stderr}`).to.equal(true)
    expect(result.code, `${machine}: ${result.stderr}`).to.equal(0)
  } finally {
    await swtpm.stop()
    await tmp.cleanup()
  }
}
