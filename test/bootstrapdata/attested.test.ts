import { readFile, readdir } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { generateBootstrapData, type OutputFormat } from '../../src/lib/bootstrapdata/index.js'
import { parseBootstrapperNodeConfig, type StaticMetadata } from '../../src/lib/nodeconfig/index.js'
import { NODE_CONFIG_PATH } from '../../src/lib/paths.js'
import { FIXTURES, fixtureText, tempWorkspace, testDeps, testOptions, validateUserData } from './helpers.js'
import { nodeFiles } from './node-files.js'

/** Everything a document would put on the node, data URLs decoded, so encodings cannot hide a secret. */
function nodeVisibleText(document: string): string {
  if (!document.startsWith('{')) return document
  return [document, ...nodeFiles(document).values()].join('\n')
}

async function secretMarkers(): Promise<Array<[string, RegExp | string]>> {
  const caKeyLine = (await readFile(path.join(FIXTURES, 'pki/ca.key'), 'utf8')).split('\n')[1] as string
  return [
    ['a bootstrap token', /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/],
    ['a PEM private key', /PRIVATE KEY/],
    ['the CA key', caKeyLine],
    ['the token given in the spec', '0123456789abcdef'],
  ]
}

function findSecrets(text: string, markers: Array<[string, RegExp | string]>): string[] {
  return markers
    .filter(([, m]) => (typeof m === 'string' ? text.includes(m) : m.test(text)))
    .map(([name]) => name)
}

describe('attested bootstrap data (no secret in user data)', () => {
  const formats: OutputFormat[] = ['attested-cloud-config', 'attested-ignition']
  for (const format of formats) {
    it(`${format}: every machine's data holds no token, no private key, no CA key, and a valid node config`, async () => {
      const ws = await tempWorkspace(false)
      try {
        const input = await readFile(path.join(FIXTURES, 'attested.yaml'), 'utf8')
        const result = await generateBootstrapData(testOptions(ws.dir, { format }), await testDeps(input))
        expect(result.machines.map((m) => m.machine)).to.deep.equal(['cp-0', 'worker-0'])
        expect(result.caFilesCreated).to.deep.equal([]) // no CA is needed, none is made
        expect(result.tokenSecret).to.equal(undefined)
        const markers = await secretMarkers()
        for (const m of result.machines) {
          const document = await readFile(m.file, 'utf8')
          await validateUserData(document)
          const visible = nodeVisibleText(document)
          expect(findSecrets(visible, markers), m.machine).to.deep.equal([])
          expect(visible).to.contain('constellation-bootstrapper.service')
          // the node config is what `bootstrap run` will load: check it with its rules
          const nodeConfig = parseBootstrapperNodeConfig(
            nodeFiles(document).get(NODE_CONFIG_PATH) ?? '',
            NODE_CONFIG_PATH,
          )
          expect(nodeConfig.metadata.provider).to.equal('static')
          const metadata = nodeConfig.metadata as StaticMetadata
          expect(metadata.self).to.deep.equal({
            name: m.machine,
            role: m.machine === 'cp-0' ? 'control-plane' : 'worker',
            vpcIP: m.machine === 'cp-0' ? '10.0.0.10' : '10.0.0.20',
          })
          expect(metadata.peers.map((p) => p.name)).to.deep.equal([
            m.machine === 'cp-0' ? 'worker-0' : 'cp-0',
          ])
          expect(metadata.loadBalancerEndpoint).to.equal('10.0.0.100:6443')
        }
      } finally {
        await ws.cleanup()
      }
    })
  }

  it('the secret detector finds the secrets in ordinary (kubeadm) data, so it can fail', async () => {
    const ws = await tempWorkspace()
    try {
      const result = await generateBootstrapData(
        testOptions(ws.dir, { format: 'ignition', machine: 'cp-1' }),
        await testDeps(await fixtureText(true)),
      )
      const visible = nodeVisibleText(await readFile(result.machines[0]?.file as string, 'utf8'))
      expect(findSecrets(visible, await secretMarkers())).to.include.members([
        'a bootstrap token',
        'a PEM private key',
        'the CA key',
      ])
    } finally {
      await ws.cleanup()
    }
  })

  it('a Machine without an InternalIP is named in the error', async () => {
    const ws = await tempWorkspace(false)
    try {
      const input = (await readFile(path.join(FIXTURES, 'attested.yaml'), 'utf8')).replace(
        'addresses: [{ type: InternalIP, address: 10.0.0.20 }]',
        'addresses: []',
      )
      await expect(
        generateBootstrapData(testOptions(ws.dir, { format: 'attested-ignition' }), await testDeps(input)),
      ).to.be.rejectedWith(/cluster\.yaml:\d+: Machine "worker-0": status\.addresses has no InternalIP/)
    } finally {
      await ws.cleanup()
    }
  })

  it('a state disk the node would refuse is an error here, naming the key bootstrap run checks', async () => {
    const ws = await tempWorkspace(false)
    try {
      const input = await readFile(path.join(FIXTURES, 'attested.yaml'), 'utf8')
      const run = generateBootstrapData(
        testOptions(ws.dir, {
          format: 'attested-ignition',
          stateDisk: { device: 'sdb' },
        }),
        await testDeps(input),
      )
      await expect(run).to.be.rejectedWith(
        /node config for Machine "cp-0" would not load in bootstrap run:\n {2}node config: stateDisk\.device: must match pattern/,
      )
      expect(await readdir(ws.dir)).to.deep.equal([])
    } finally {
      await ws.cleanup()
    }
  })
})
