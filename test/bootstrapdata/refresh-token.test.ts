/**
 * `bootstrap-data refresh-token` (built CLI) against the Kubernetes API contract fake (TEST DOUBLE):
 * a token close to its expiry is extended, a fresh one is left alone, a removed one is an error,
 * and the token secret is never accepted in argv.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer, type KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
const b64 = (v: string) => Buffer.from(v).toString('base64')

describe('bootstrap-data refresh-token (built CLI)', function () {
  this.timeout(30_000)
  let api: FakeApiServer
  let tmp: TempDir
  let kubeconfig: string
  const expiration = () =>
    Buffer.from(
      (
        (api.get('v1', 'secrets', 'bootstrap-token-abcdef', 'kube-system') as KubeObject).data as Record<
          string,
          string
        >
      ).expiration as string,
      'base64',
    ).toString()

  beforeEach(async () => {
    ;[api, tmp] = await Promise.all([startFakeApiServer(), makeTempDir('constell-refresh-')])
    kubeconfig = path.join(tmp.dir, 'workload.kubeconfig')
    await writeFile(kubeconfig, api.kubeconfig(), { mode: 0o600 })
    api.put('v1', 'secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      data: {
        'token-id': b64('abcdef'),
        'token-secret': b64('0123456789abcdef'),
        expiration: b64(rfc3339(Date.now() + 60_000)),
      },
    })
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  const refresh = (...args: string[]) =>
    runCli(['bootstrap-data', 'refresh-token', ...args, '--workload-kubeconfig', kubeconfig])

  it('extends a token about to expire to now + TTL, then leaves the fresh one alone', async () => {
    const first = await refresh('abcdef')
    expect(first.code, first.stderr).to.equal(0)
    expect(first.stdout).to.match(/Bootstrap token abcdef now expires/)
    const extended = Date.parse(expiration())
    expect(extended - Date.now()).to.be.within(14 * 60_000, 15 * 60_000 + 5_000)
    const second = await refresh('abcdef', '--json')
    expect(second.code, second.stderr).to.equal(0)
    expect(JSON.parse(second.stdout)).to.include({ tokenId: 'abcdef', state: 'fresh' })
    expect(Date.parse(expiration())).to.equal(extended)
    // the token itself is unchanged, so user data already handed out keeps working
    const data = (api.get('v1', 'secrets', 'bootstrap-token-abcdef', 'kube-system') as KubeObject)
      .data as Record<string, string>
    expect(Buffer.from(data['token-secret'] as string, 'base64').toString()).to.equal('0123456789abcdef')
  })

  it('a removed token is an error saying to generate again; bad arguments are usage errors', async () => {
    const missing = await refresh('zzzzzz')
    expect(missing.code).to.equal(1)
    expect(missing.stderr).to.match(/bootstrap token zzzzzz is not in the cluster/)
    expect(missing.stderr).to.match(/generate join data again/)
    const whole = await refresh('abcdef.0123456789abcdef')
    expect(whole.code).to.equal(2)
    expect(whole.stderr).to.match(/pass only the token ID/)
    const bad = await refresh('ABC')
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.match(/token ID "ABC" is not six characters/)
  })
})
