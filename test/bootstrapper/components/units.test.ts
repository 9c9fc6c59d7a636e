import { createServer, type Server } from 'node:http'
import { lstat, readFile, readlink, readdir } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { pack } from 'tar-stream'
import { expect } from '../../support/chai.js'
import { makeTempDir } from '../../support/temp.js'
import { httpGet } from '../../../src/lib/system/http-get.js'
import {
  stageComponents,
  type InstallerDeps,
  LogCollector,
  NodeLock,
} from '../../../src/lib/bootstrapper/index.js'
import { chainMessage } from '../../../src/lib/errors/index.js'
import { createHash } from 'node:crypto'
import { chunk, redactCredentials } from '../../../src/lib/bootstrapper/logs.js'
import {
  decodeDataUrl,
  checkComponents,
  type Component,
  installTarget,
} from '../../../src/lib/bootstrapper/components/installer.js'
import { extractTarGz } from '../../../src/lib/bootstrapper/components/tar-extract.js'
import { silentLogger } from '../../../src/lib/system/logger.js'

async function tarGz(
  entries: Array<{ name: string; type?: 'file' | 'directory' | 'symlink'; linkname?: string; body?: string }>,
) {
  const p = pack()
  for (const e of entries) {
    if (e.type === 'symlink') p.entry({ name: e.name, type: 'symlink', linkname: e.linkname ?? '' })
    else if (e.type === 'directory') p.entry({ name: e.name, type: 'directory' })
    else p.entry({ name: e.name, mode: 0o755 }, e.body ?? '')
  }
  p.finalize()
  const parts: Buffer[] = []
  for await (const part of p) parts.push(Buffer.from(part as Uint8Array))
  return gzipSync(Buffer.concat(parts))
}

/** A tar holding one file of `size` zero bytes, streamed into the archive. */
async function tarBytes(name: string, size: number): Promise<Buffer> {
  const p = pack()
  const entry = p.entry({ name, size, mode: 0o644 })
  const zeros = Buffer.alloc(1024 * 1024)
  for (let left = size; left > 0; left -= zeros.length)
    entry.write(zeros.subarray(0, Math.min(left, zeros.length)))
  entry.end(() => {})
  p.finalize()
  const parts: Buffer[] = []
  for await (const part of p) parts.push(Buffer.from(part as Uint8Array))
  return Buffer.concat(parts)
}

/** The server on a free loopback port; close() also ends requests it never answered. */
async function onLoopback(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

describe('bootstrapper units', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  describe('tar.gz extraction', () => {
    it('extracts files, directories and symlinks that stay inside', async () => {
      const archive = await tarGz([
        { name: 'bin/', type: 'directory' },
        { name: 'bin/tool', body: 'x' },
        { name: 'bin/alias', type: 'symlink', linkname: 'tool' },
      ])
      await extractTarGz(archive, dir)
      expect(await readFile(path.join(dir, 'bin/tool'), 'utf8')).to.equal('x')
      expect(await readlink(path.join(dir, 'bin/alias'))).to.equal('tool')
      expect((await lstat(path.join(dir, 'bin/tool'))).mode & 0o777).to.equal(0o755)
    })
    const refusals: Record<string, { entries: Parameters<typeof tarGz>[0]; want: RegExp }> = {
      'a ".." path element': {
        entries: [{ name: 'a/../../evil', body: 'x' }],
        want: /"a\/..\/..\/evil" contains a ".." path element/,
      },
      'an absolute path': { entries: [{ name: '/etc/evil', body: 'x' }], want: /absolute path/ },
      'a symlink to an absolute path': {
        entries: [{ name: 'l', type: 'symlink', linkname: '/etc/passwd' }],
        want: /links to the absolute path/,
      },
      'a symlink escaping the install path': {
        entries: [{ name: 'd/l', type: 'symlink', linkname: '../../outside' }],
        want: /outside the install path/,
      },
    }
    for (const [name, tc] of Object.entries(refusals)) {
      it(`refuses ${name} and writes nothing outside`, async () => {
        const dest = path.join(dir, 'dest')
        await expect(extractTarGz(await tarGz(tc.entries), dest)).to.be.rejectedWith(tc.want)
        expect(await readdir(dir)).to.deep.equal(['dest'])
      })
    }
  })

  describe('installer', () => {
    let server: Server
    let base: string
    let failuresLeft: number
    let failStatus: number
    let requests: number
    const body = Buffer.from('#!/bin/sh\necho fake\n')
    const sha256 = (data: Buffer) => 'sha256:' + createHash('sha256').update(data).digest('hex')
    const hash = sha256(body)
    beforeEach(async () => {
      requests = 0
      server = createServer((req, res) => {
        requests++
        if (failuresLeft-- > 0) return res.writeHead(failStatus).end()
        if (req.url === '/missing') return res.writeHead(404).end()
        res.writeHead(200).end(body)
      })
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    afterEach(() => new Promise<void>((r) => server.close(() => r())))
    const root = () => path.join(dir, 'root')
    const deps = () => ({
      root: root(),
      stagingDir: path.join(dir, 'staging'),
      get: httpGet,
      log: silentLogger,
      sleep: () => Promise.resolve(),
    })
    /** `<url>/<name>`, installed as /bin/<name>. */
    const binAt = (url: string, name: string): Component => ({
      url: `${url}/${name}`,
      hash,
      installPath: `/bin/${name}`,
      extract: false,
    })
    const install = async (components: Component[], more: Partial<InstallerDeps> = {}) => {
      const staged = await stageComponents(components, { ...deps(), ...more })
      try {
        await staged.install()
      } finally {
        await staged.discard()
      }
    }

    for (const status of [408, 425, 429, 502, 503, 504]) {
      it(`retries HTTP ${status} and then installs`, async () => {
        failuresLeft = 2
        failStatus = status
        await install([
          { url: `${base}/kubeadm`, hash, installPath: '/run/state/bin/kubeadm', extract: false },
        ])
        expect(requests).to.equal(3)
        const file = path.join(root(), 'run/state/bin/kubeadm')
        expect(await readFile(file)).to.deep.equal(body)
        expect((await lstat(file)).mode & 0o777).to.equal(0o544)
        expect(await readdir(path.join(dir, 'staging'))).to.deep.equal([])
      })
    }
    it('stages components side by side: the first answer waits here for the second request', async () => {
      const held = createServer((req, res) => {
        if (req.url === '/second') {
          res.writeHead(200).end(body)
          release(200)
        } else void answered.then((status) => res.writeHead(status).end(status === 200 ? body : undefined))
      })
      let release = (_status: number) => {}
      const answered = new Promise<number>((r) => (release = r))
      // one at a time, /first would wait for ever: after 3 s it is refused instead
      const giveUp = setTimeout(() => release(404), 3000)
      const { url, close } = await onLoopback(held)
      try {
        const staged = await stageComponents([binAt(url, 'first'), binAt(url, 'second')], deps())
        await staged.install()
        await staged.discard()
        expect(await readdir(path.join(root(), 'bin'))).to.deep.equal(['first', 'second'])
      } finally {
        clearTimeout(giveUp)
        release(404)
        await close()
      }
    })
    it('the first failure ends the downloads beside it and is the error; staging removed', async () => {
      let hanging = () => {}
      const hangingClosed = new Promise<void>((r) => (hanging = r))
      let hangsArrived = () => {}
      const arrived = new Promise<void>((r) => (hangsArrived = r))
      const slow = createServer((req, res) => {
        // the 404 waits until the other download is in flight: a sibling aborted before its request
        // reached this server would never be seen closing
        if (req.url === '/missing') return void arrived.then(() => res.writeHead(404).end())
        req.on('close', hanging) // never answered: only the abort ends it
        hangsArrived()
      })
      const { url, close } = await onLoopback(slow)
      try {
        const err = await stageComponents([binAt(url, 'hangs'), binAt(url, 'missing')], deps()).catch(
          (e: unknown) => e,
        )
        expect((err as Error).message).to.match(
          /^component 1 \(http:\/\/127.0.0.1:\d+\/missing → \/bin\/missing\)$/,
        )
        expect(chainMessage(err)).to.include('HTTP 404')
        await hangingClosed
        expect(await readdir(path.join(dir, 'staging'))).to.deep.equal([])
      } finally {
        await close()
      }
    })
    it('does not retry a 404 and names the component', async () => {
      failuresLeft = 0
      await expect(
        install([{ url: `${base}/missing`, hash, installPath: '/x', extract: false }]),
      ).to.be.rejectedWith(/component 0 \(http:\/\/127.0.0.1:\d+\/missing → \/x\)/)
      expect(requests).to.equal(1)
    })
    it('gives up after the attempts are spent', async () => {
      failuresLeft = 100
      failStatus = 503
      await expect(install([{ url: `${base}/k`, hash, installPath: '/k', extract: false }], { attempts: 3 }))
        .to.be.rejected
      expect(requests).to.equal(3)
    })
    it('refuses a wrong sha256 when staging: nothing under the root, staging removed', async () => {
      failuresLeft = 0
      const err = await stageComponents(
        [
          {
            url: `${base}/k`,
            hash: 'sha256:' + '0'.repeat(64),
            installPath: '/run/state/bin/k',
            extract: false,
          },
        ],
        deps(),
      ).catch((e: unknown) => e)
      expect(String((err as Error).cause)).to.match(/sha256 mismatch/)
      expect(await readdir(dir)).to.deep.equal(['staging'])
      expect(await readdir(path.join(dir, 'staging'))).to.deep.equal([])
    })
    const refused: Record<string, { component: Component; want: RegExp }> = {
      'an empty hash': {
        component: { url: 'data:,x', hash: '', installPath: '/x', extract: false },
        want: /component \d \(data:,…\): hash "" is not sha256:<64 hex digits>; every component needs one/,
      },
      'a hash of another kind': {
        component: { url: 'data:,x', hash: 'md5:' + '0'.repeat(32), installPath: '/x', extract: false },
        want: /hash "md5:0+" is not sha256/,
      },
      'an install path with ..': {
        component: {
          url: 'data:,x',
          hash: sha256(Buffer.from('x')),
          installPath: '/opt/../../etc/x',
          extract: false,
        },
        want: /component \d \(data:,…\): install path "\/opt\/..\/..\/etc\/x" contains "\.\."/,
      },
      'a relative install path': {
        component: { url: 'data:,x', hash: sha256(Buffer.from('x')), installPath: 'etc/x', extract: false },
        want: /install path "etc\/x" is not absolute/,
      },
      'the root itself': {
        component: { url: 'data:,x', hash: sha256(Buffer.from('x')), installPath: '/', extract: true },
        want: /install path "\/" is the node root or leaves it/,
      },
    }
    for (const [name, tc] of Object.entries(refused)) {
      it(`refuses ${name} before downloading anything`, async () => {
        const second = { url: `${base}/k`, hash, installPath: '/k', extract: false }
        expect(() => checkComponents([tc.component], root())).to.throw(tc.want)
        await expect(stageComponents([second, tc.component], deps())).to.be.rejectedWith(tc.want)
        expect(requests).to.equal(0)
      })
    }
    it('installs data: URLs (base64 and plain) and extracts tarballs under the root', async () => {
      const tgz = await tarGz([{ name: 'bridge', body: 'cni' }])
      const json = 'data:application/json;base64,' + Buffer.from('[1]').toString('base64')
      await install([
        { url: json, hash: sha256(Buffer.from('[1]')), installPath: '/opt/p/a+json.json', extract: false },
        {
          url: 'data:text/plain,hello%20world',
          hash: sha256(Buffer.from('hello world')),
          installPath: '/opt/p/b',
          extract: false,
        },
        {
          url: 'data:application/gzip;base64,' + tgz.toString('base64'),
          hash: sha256(tgz),
          installPath: '/opt/cni/bin',
          extract: true,
        },
      ])
      expect(await readFile(path.join(root(), 'opt/p/a+json.json'), 'utf8')).to.equal('[1]')
      expect(await readFile(path.join(root(), 'opt/p/b'), 'utf8')).to.equal('hello world')
      expect(await readFile(path.join(root(), 'opt/cni/bin/bridge'), 'utf8')).to.equal('cni')
    })
    it('a gzip bomb stops at the extraction cap, before anything reaches the root', async () => {
      const tgz = gzipSync(await tarBytes('bomb', 32 * 1024 * 1024))
      const err = await stageComponents(
        [
          {
            url: 'data:application/gzip;base64,' + tgz.toString('base64'),
            hash: sha256(tgz),
            installPath: '/opt/bomb',
            extract: true,
          },
        ],
        { ...deps(), maxExtractedBytes: 1024 * 1024 },
      ).catch((e: unknown) => e)
      expect(chainMessage(err)).to.match(
        /archive entry "bomb" makes the archive exceed 1048576 extracted bytes/,
      )
      expect(await readdir(dir)).to.deep.equal(['staging'])
      expect(await readdir(path.join(dir, 'staging'))).to.deep.equal([])
    })
    it('refuses other URL schemes', async () => {
      await expect(
        install([{ url: 'ftp://x/k', hash, installPath: '/x', extract: false }]),
      ).to.be.rejectedWith(/component 0/)
    })
    it('keeps install paths under the root', () => {
      expect(installTarget('/r', '/run/state/bin/kubeadm')).to.equal('/r/run/state/bin/kubeadm')
      expect(() => installTarget('/r', 'relative')).to.throw(/not absolute/)
      expect(() => installTarget('/r', '/../../etc/passwd')).to.throw(/contains ".."/)
      expect(decodeDataUrl('data:,a%2Cb').toString()).to.equal('a,b')
    })
    it('keeps install paths under a real node\'s root, "/" (found in a VM node)', () => {
      expect(installTarget('/', '/opt/cni/bin')).to.equal('/opt/cni/bin')
      expect(installTarget('/', '/run/state/bin/kubeadm')).to.equal('/run/state/bin/kubeadm')
      expect(() => installTarget('/', '/')).to.throw(/is the node root or leaves it/)
      expect(() => installTarget('/', '/../etc')).to.throw(/contains ".."/)
    })
  })

  describe('node lock', () => {
    it('extends PCR 15 with SHA256(clusterID) once and never unlocks', async () => {
      const spyExtends: Array<[number, string]> = []
      const lock = new NodeLock({
        extendPcr: (i, d) => Promise.resolve(void spyExtends.push([i, d.toString('hex')])),
      })
      const id = Buffer.alloc(32, 1)
      const [a, b] = await Promise.all([lock.tryLockOnce(id), lock.tryLockOnce(Buffer.alloc(32, 2))])
      expect([a, b]).to.deep.equal([true, false])
      expect(spyExtends).to.deep.equal([[15, createHash('sha256').update(id).digest('hex')]])
      expect(await lock.tryLockOnce(id)).to.equal(false)
    })
    it('stays locked when the TPM fails (the node is unusable, never re-lockable)', async () => {
      const lock = new NodeLock({ extendPcr: () => Promise.reject(new Error('tpm gone')) })
      await expect(lock.tryLockOnce(Buffer.alloc(32))).to.be.rejectedWith('tpm gone')
      expect(await lock.tryLockOnce(Buffer.alloc(32))).to.equal(false)
    })
  })

  describe('log collection', () => {
    const redactions: Record<string, { line: string; want: string }> = {
      'the token flag': {
        line: 'kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef \\',
        want: 'kubeadm join 10.0.0.1:6443 --token [redacted] \\',
      },
      'flags with =': {
        line: '--token=t0k3n --discovery-token-ca-cert-hash=sha256:' + 'a'.repeat(64),
        want: '--token=[redacted] --discovery-token-ca-cert-hash=[redacted]',
      },
      'the CA hash and certificate key flags': {
        line:
          '\t--discovery-token-ca-cert-hash sha256:' +
          'b'.repeat(64) +
          ' --certificate-key ' +
          'c'.repeat(64),
        want: '\t--discovery-token-ca-cert-hash [redacted] --certificate-key [redacted]',
      },
      'a bootstrap token anywhere': {
        line: '[bootstrap-token] Using token: q1w2e3.r4t5y6u7i8o9p0a1',
        want: '[bootstrap-token] Using token: [redacted]',
      },
      'the certificate key on the line after its name': {
        line: '[upload-certs] Using certificate key:\n' + 'd'.repeat(64),
        want: '[upload-certs] Using certificate key:\n[redacted]',
      },
      'a 64-hex line alone': { line: 'e'.repeat(64), want: '[redacted]' },
      'an ordinary line': {
        line: '{"msg":"Node lock taken","clusterId":"' + 'f'.repeat(64) + '"}',
        want: '',
      },
    }
    for (const [name, tc] of Object.entries(redactions)) {
      it(`redacts ${name}`, () => {
        expect(redactCredentials(tc.line)).to.equal(tc.want || tc.line)
      })
    }

    it("gives each attempt only its own lines, not the daemon's history or a concurrent attempt's", async () => {
      const logs = new LogCollector()
      logs.write('before any attempt')
      let releaseA = () => {}
      const aWaits = new Promise<void>((r) => (releaseA = r))
      const a = logs.runAttempt(async () => {
        logs.write('a: first')
        await aWaits
        logs.append('a: kubeadm says --token abcdef.0123456789abcdef\n')
        return logs.attemptLog().toString()
      })
      const b = logs.runAttempt(async () => {
        logs.write('b: only')
        releaseA()
        await Promise.resolve()
        return logs.attemptLog().toString()
      })
      expect(await a).to.equal('a: first\na: kubeadm says --token [redacted]\n')
      expect(await b).to.equal('b: only\n')
      expect(logs.attemptLog()).to.have.length(0)
      expect((await logs.collect()).toString())
        .to.include('before any attempt')
        .and.include('b: only')
    })

    it('keeps lines and kubeadm output, chunks them in 1 KiB pieces, drops the oldest over the limit', async () => {
      const forwarded: string[] = []
      const logs = new LogCollector((l) => forwarded.push(l), 3000)
      for (let i = 0; i < 40; i++) logs.write(`{"msg":"line ${i}","pad":"${'x'.repeat(90)}"}`)
      logs.append('[preflight] ok\n\n[init] done\n')
      const all = await logs.collect()
      expect(all.length).to.be.at.most(3000)
      expect(all.toString()).to.include('[init] done\n').and.not.include('line 0"')
      expect(forwarded).to.have.length(40)
      const chunks = chunk(all)
      expect(chunks.every((c) => c.length <= 1024)).to.equal(true)
      expect(Buffer.concat(chunks)).to.deep.equal(all)
    })
  })
})
