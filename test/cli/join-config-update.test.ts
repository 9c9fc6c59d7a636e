import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { JOIN_CONFIG_MAP, parseJoinConfig } from '../../src/lib/attestation/index.js'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { freePort } from '../support/ports.js'
import { startSilentPeer } from '../support/silent-peer.js'
import { makeTempDir } from '../support/temp.js'

/** `constellation join-config update` against the Kubernetes API test double (FakeApiServer). */
describe('constellation join-config update', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  let api: FakeApiServer
  let kubeconfig: string
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    await generateWorkspace({
      workspace: dir,
      provider: 'qemu',
      kubernetes: 'v1.31',
      variant: 'qemu-vtpm',
      name: 'constell',
      endpoint: '127.0.0.1',
    })
    api = await new FakeApiServer().start()
    kubeconfig = path.join(dir, 'admin.conf')
    await writeFile(kubeconfig, api.kubeconfig())
  })
  afterEach(async () => {
    await api.stop()
    await cleanup()
  })
  const stored = () => {
    const cm = api.get('v1', 'configmaps', JOIN_CONFIG_MAP.name, JOIN_CONFIG_MAP.namespace)
    const text = (cm?.data as Record<string, string> | undefined)?.[JOIN_CONFIG_MAP.key]
    return text === undefined ? undefined : parseJoinConfig(text)
  }
  const update = (...extra: string[]) =>
    runCli(['join-config', 'update', '-C', dir, '--kubeconfig', kubeconfig, ...extra])

  it("writes the config's measurements (PCR 15 enforced as zero); a second run changes nothing", async () => {
    const first = await update('--yes', '--json')
    expect(first.code, first.stderr).to.equal(0)
    const result = JSON.parse(first.stdout) as { updated: boolean; configMap: string }
    expect(result).to.include({ updated: true, configMap: 'kube-system/join-config' })
    const config = await readFile(workspacePaths(dir).config, 'utf8')
    const set = stored()
    expect(set?.get(15)).to.deep.equal({ expected: Buffer.alloc(32), warnOnly: false })
    for (const [pcr, m] of set ?? []) expect(config, `PCR ${pcr}`).to.include(m.expected.toString('hex'))

    const again = await update('--yes')
    expect(again.code, again.stderr).to.equal(0)
    expect(again.stdout).to.include('already enforces these measurements; nothing to update')
    expect(api.requests.filter((r) => r.method === 'PUT' || r.method === 'POST')).to.have.length(1)
  })

  it('without --yes and without a terminal: exit 2, nothing written', async () => {
    const res = await update()
    expect(res.code).to.equal(2)
    expect(res.stderr).to.include("refusing to update the cluster's join-config without confirmation")
    expect(stored()).to.equal(undefined)
  })

  it('other credentials than the admin kubeconfig: HTTP 401, exit 1, nothing written', async () => {
    const other = path.join(dir, 'other.conf')
    await writeFile(other, api.kubeconfig().replace('token: fake-token', 'token: intruder'))
    const res = await runCli(['join-config', 'update', '-C', dir, '--kubeconfig', other, '--yes'])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.match(/HTTP 401/)
    expect(stored()).to.equal(undefined)
  })

  it('an unreachable cluster: exit 3, naming the address', async () => {
    const closed = path.join(dir, 'closed.conf')
    await writeFile(closed, api.kubeconfig().replace(api.url, `https://127.0.0.1:${await freePort()}`))
    const res = await runCli(['join-config', 'update', '-C', dir, '--kubeconfig', closed, '--yes'])
    expect(res.code).to.equal(3)
    expect(res.stderr).to.match(
      /reading ConfigMap kube-system\/join-config at https:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/,
    )
    // the same words as upgrade's for the same cluster: which kubeconfig to look at
    expect(res.stderr).to.include(`Hint: check that the cluster in ${closed} is reachable from here`)
  })

  it('a cluster that accepts and never answers: exit 3 at the bound upgrade has (10 s), not 30 s', async () => {
    const silent = await startSilentPeer()
    try {
      const hung = path.join(dir, 'hung.conf')
      await writeFile(hung, api.kubeconfig().replace(api.url, `https://127.0.0.1:${silent.port}`))
      const res = await runCli(['join-config', 'update', '-C', dir, '--kubeconfig', hung, '--yes'])
      expect(res.code, res.stderr).to.equal(3)
      expect(res.stderr).to.include('reading ConfigMap kube-system/join-config')
      expect(res.stderr).to.include('no answer within 10s')
    } finally {
      await silent.stop()
    }
  })
})
