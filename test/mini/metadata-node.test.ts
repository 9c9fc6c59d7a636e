/**
 * `bootstrap run` (the built CLI, a real swtpm and LUKS2 image) with `metadata: {provider: http}`:
 * the node asks the mini metadata service who it is, who its peers are and where the endpoint is,
 * and its join client dials the join services that follow from those answers.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { createLuksImage } from '../support/luks-image.js'
import { freePort, waitForPort } from '../support/ports.js'
import { startSwtpm } from '../support/swtpm.js'
import { makeTempDir } from '../support/temp.js'
import { MetadataServer } from '../../src/lib/mini/index.js'
import { hashInitSecret } from '../../src/lib/kms/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'

describe('bootstrap run with an http metadata provider (built CLI, swtpm, LUKS2 image)', function () {
  this.timeout(60_000)

  it('takes its identity, peers and endpoint from the metadata service (its config names only the service)', async () => {
    const hash = await hashInitSecret(Buffer.from('init-secret-0123456789abcdef0123'), 4)
    const tmp = await makeTempDir('constell-metadata-node-')
    const swtpm = await startSwtpm()
    const server = new MetadataServer(() => ({
      members: [
        { name: 'worker-7', role: 'worker', vpcIP: '127.0.0.1' },
        { name: 'cp-0', role: 'control-plane', vpcIP: '127.0.0.3' },
      ],
      endpointHost: '127.0.0.5',
      initSecretHash: hash,
    }))
    try {
      const url = await server.start('127.0.0.1:0')
      const disk = await createLuksImage(tmp.dir, { root: path.join(tmp.dir, 'root') })
      const [initPort, joinPort] = [await freePort(), await freePort()]
      const file = path.join(tmp.dir, 'node-config.yaml')
      await writeFile(
        file,
        stringifyYaml({
          attestationVariant: 'qemu-vtpm',
          tpm: { swtpm: swtpm.endpoint },
          root: path.join(tmp.dir, 'root'),
          initServer: { listen: `127.0.0.1:${initPort}` },
          joinService: { listen: `0.0.0.0:${joinPort}` },
          stateDisk: { device: disk.image, pbkdf: { type: 'pbkdf2', iterations: 1000 } },
          metadata: { provider: 'http', url },
        }),
      )
      const stop = new AbortController()
      let exited = false
      const daemon = runCli(['bootstrap', 'run', '--config', file], { signal: stop.signal }).finally(
        () => (exited = true),
      )
      const listening = await waitForPort(initPort, { gaveUp: () => exited }).then(
        () => true,
        () => false,
      )
      // the join client asks the endpoint's host, then the control-plane peer, at the join port
      await new Promise((r) => setTimeout(r, 500))
      stop.abort()
      const result = await daemon
      expect(listening, result.stderr).to.equal(true)
      const asking = result.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; endpoints?: string[] })
        .find((l) => l.msg === 'Asking for a join ticket')
      expect(asking?.endpoints, result.stderr).to.deep.equal([
        `127.0.0.5:${joinPort}`,
        `127.0.0.3:${joinPort}`,
      ])
    } finally {
      await server.stop()
      await swtpm.stop()
      await tmp.cleanup()
    }
  })
})
