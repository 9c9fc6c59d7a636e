import { createServer, type AddressInfo, type Socket } from 'node:net'
import { cp, readFile, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { exitCodeOf } from '../../src/lib/errors/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { freePort } from '../support/ports.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { type KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { registerTokenSecret, tokenSecret } from '../../src/lib/bootstrapdata/tokens.js'
import { FIXED_NOW, FIXTURES, fixtureText } from './helpers.js'

const secretData = (secret?: KubeObject): Record<string, string> =>
  Object.fromEntries(
    Object.entries((secret?.data ?? {}) as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString(),
    ]),
  )

describe('bootstrap tokens', () => {
  it('become the standard bootstrap-token Secret', () => {
    const secret = tokenSecret({ id: 'abcdef', secret: '0123456789abcdef', expires: FIXED_NOW })
    expect(secret.metadata).to.deep.equal({ name: 'bootstrap-token-abcdef', namespace: 'kube-system' })
    expect(secret.type).to.equal('bootstrap.kubernetes.io/token')
    expect(secret.stringData).to.include({
      'token-id': 'abcdef',
      'token-secret': '0123456789abcdef',
      expiration: '2026-01-02T03:04:05Z',
      'usage-bootstrap-authentication': 'true',
      'usage-bootstrap-signing': 'true',
      'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
    })
  })

  describe('registration in the workload cluster (FakeApiServer, a test double of the Kubernetes API)', () => {
    let api: FakeApiServer
    let tmp: { dir: string; cleanup: () => Promise<void> }
    let kubeconfig: string
    beforeEach(async () => {
      api = await new FakeApiServer().start()
      tmp = await makeTempDir()
      kubeconfig = path.join(tmp.dir, 'kubeconfig')
      await writeFile(kubeconfig, api.kubeconfig())
    })
    afterEach(async () => {
      await api.stop()
      await tmp.cleanup()
    })

    it('creates the Secret in kube-system', async () => {
      const secret = tokenSecret({ id: 'abcdef', secret: '0123456789abcdef', expires: FIXED_NOW })
      await registerTokenSecret({ file: kubeconfig }, secret)
      const stored = api.get('v1', 'secrets', 'bootstrap-token-abcdef', 'kube-system')
      expect(stored?.type).to.equal('bootstrap.kubernetes.io/token')
      // the API server keeps stringData as base64 data
      expect(secretData(stored)['token-secret']).to.equal('0123456789abcdef')
    })

    it('reports a refused request with the status, never the token', async () => {
      api.failOn({ method: 'POST', pathIncludes: '/secrets', status: 403 })
      const secret = tokenSecret({ id: 'abcdef', secret: '0123456789abcdef', expires: FIXED_NOW })
      const err = await registerTokenSecret({ file: kubeconfig }, secret).then(
        () => undefined,
        (e: unknown) => e as Error,
      )
      expect(err?.message).to.match(
        /creating Secret kube-system\/bootstrap-token-abcdef at https:\/\/127\.0\.0\.1:\d+: HTTP 403/,
      )
      expect(err?.message).not.to.contain('0123456789abcdef')
    })

    it('a refused request is exit 1 (the cluster answered), not "unreachable"', async () => {
      api.failOn({ method: 'POST', pathIncludes: '/secrets', status: 403 })
      const secret = tokenSecret({ id: 'abcdef', secret: '0123456789abcdef', expires: FIXED_NOW })
      const err = await registerTokenSecret({ file: kubeconfig }, secret).catch((e: unknown) => e)
      expect(exitCodeOf(err)).to.equal(1)
    })

    it('an API server that accepts and never answers is given up on: exit 3, the wait bounded', async () => {
      const silent = await silentServer()
      try {
        const file = path.join(tmp.dir, 'silent.kubeconfig')
        await writeFile(file, api.kubeconfig().replace(api.url, `https://127.0.0.1:${silent.port}`))
        const secret = tokenSecret({ id: 'abcdef', secret: '0123456789abcdef', expires: FIXED_NOW })
        const err = await registerTokenSecret({ file }, secret, { requestTimeoutMs: 300 }).catch(
          (e: unknown) => e,
        )
        expect(exitCodeOf(err)).to.equal(3)
        expect((err as Error).message).to.match(
          /creating Secret kube-system\/bootstrap-token-abcdef at https:\/\/127\.0\.0\.1:\d+: no answer within 0.3s/,
        )
      } finally {
        await silent.close()
      }
    })

    it('the CLI exits 3 for an unreachable API server and leaves no file behind', async () => {
      const input = path.join(tmp.dir, 'ready.yaml')
      await writeFile(input, await fixtureText(true))
      await cp(path.join(FIXTURES, 'pki'), path.join(tmp.dir, 'pki'), { recursive: true })
      const file = path.join(tmp.dir, 'closed.kubeconfig')
      await writeFile(file, api.kubeconfig().replace(api.url, `https://127.0.0.1:${await freePort()}`))
      const res = await runCli([
        'bootstrap-data',
        'generate',
        '-f',
        input,
        '--machine',
        'worker-0',
        '-C',
        tmp.dir,
        '-o',
        path.join(tmp.dir, 'out/'),
        '--workload-kubeconfig',
        file,
      ])
      expect(res.code, res.stderr).to.equal(3)
      expect(res.stderr).to.match(/creating Secret kube-system\/bootstrap-token-.*: .*ECONNREFUSED/)
      expect(res.stderr).to.match(/removed the files this run had written/)
      expect((await readdir(tmp.dir)).sort()).to.deep.equal(
        ['closed.kubeconfig', 'kubeconfig', 'pki', 'ready.yaml'].sort(),
      )
    })

    it('the CLI registers it with --workload-kubeconfig and writes no Secret file (the token stays out of the output)', async () => {
      const input = path.join(tmp.dir, 'ready.yaml')
      await writeFile(input, await fixtureText(true))
      const args = [
        'bootstrap-data',
        'generate',
        '-f',
        input,
        '--machine',
        'worker-0',
        '--ca-dir',
        path.join(tmp.dir, 'pki'),
      ]
      const missingCas = await runCli([
        ...args,
        '-o',
        path.join(tmp.dir, 'a/'),
        '--workload-kubeconfig',
        kubeconfig,
      ])
      expect(missingCas.code, missingCas.stderr).to.equal(1) // join data needs the cluster's CAs
      expect(missingCas.stderr).to.contain('ca.crt does not exist')
      expect(api.list('v1', 'secrets', 'kube-system')).to.deep.equal([])

      await cp(path.join(FIXTURES, 'pki'), path.join(tmp.dir, 'pki'), { recursive: true })
      const ok = await runCli([
        ...args,
        '-o',
        path.join(tmp.dir, 'b/'),
        '--workload-kubeconfig',
        kubeconfig,
        '--json',
      ])
      expect(ok.code, ok.stderr).to.equal(0)
      const result = JSON.parse(ok.stdout) as {
        tokenSecret: { name: string; registered: boolean; file?: string }
      }
      expect(result.tokenSecret.registered).to.equal(true)
      expect(result.tokenSecret.file).to.equal(undefined)
      expect(await readdir(path.join(tmp.dir, 'b'))).to.deep.equal(['worker-0.cloud-config'])
      const stored = api.get('v1', 'secrets', result.tokenSecret.name, 'kube-system')
      const data = secretData(stored)
      expect(await readFile(path.join(tmp.dir, 'b/worker-0.cloud-config'), 'utf8')).to.contain(
        `token: ${data['token-id']}.${data['token-secret']}`,
      )
      expect(ok.stdout + ok.stderr).not.to.contain(data['token-secret'])
    })
  })
})

/** A TCP server that accepts and never says a word (not even a TLS handshake). */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined) // the client gives up with a reset
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
