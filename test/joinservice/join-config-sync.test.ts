import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { encodeJoinConfig } from '../../src/lib/attestation/index.js'
import { JoinConfigSync, type JoinConfigMap } from '../../src/lib/joinservice/index.js'
import { createLogger, writeFileAtomic } from '../../src/lib/system/index.js'

const joinConfig = (pcr4: number) =>
  encodeJoinConfig(
    new Map([
      [4, { expected: Buffer.alloc(32, pcr4), warnOnly: false }],
      [15, { expected: Buffer.alloc(32), warnOnly: false }],
    ]),
  )

/** The ConfigMap as a test controls it; the production one is the Kubernetes API (test/kube). */
class ConfigMapDouble implements JoinConfigMap {
  text?: string
  down = false
  creates = 0
  read() {
    return this.down ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve(this.text)
  }
  create(text: string) {
    this.creates++
    this.text = text
    return Promise.resolve()
  }
}

describe('join-config sync (cluster ConfigMap → the file the join service follows)', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let file: string
  let lines: Array<{ level: string; msg: string; error?: string }>
  let configMap: ConfigMapDouble
  const sync = () =>
    new JoinConfigSync({
      configMap,
      file,
      logger: createLogger({ format: 'json', write: (l) => lines.push(JSON.parse(l) as (typeof lines)[0]) }),
    })
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    file = path.join(dir, 'var/config/join-config.json')
    lines = []
    configMap = new ConfigMapDouble()
  })
  afterEach(() => cleanup())

  it('the first control plane publishes the join-config init wrote', async () => {
    await writeFileAtomic(file, joinConfig(1))
    await sync().syncOnce()
    expect(configMap.text).to.equal(joinConfig(1))
    await sync().syncOnce()
    expect(configMap.creates).to.equal(1)
  })

  it("copies an operator's update into the file, 0600", async () => {
    await writeFileAtomic(file, joinConfig(1))
    configMap.text = joinConfig(2)
    await sync().syncOnce()
    expect(await readFile(file, 'utf8')).to.equal(joinConfig(2))
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    expect(lines.map((l) => l.msg)).to.include('The cluster join-config changed; measurements updated')
  })

  it('a malformed ConfigMap never reaches the file: the last good set stays, logged once', async () => {
    await writeFileAtomic(file, joinConfig(1))
    configMap.text = '{"measurements": {"15": {"expected": "ff", "warnOnly": true}}}'
    const s = sync()
    await s.syncOnce()
    await s.syncOnce()
    expect(await readFile(file, 'utf8')).to.equal(joinConfig(1))
    const warnings = lines.filter((l) => l.level === 'warn')
    expect(warnings).to.have.length(1)
    expect(warnings[0]?.msg).to.include('malformed; keeping the last good measurements')
    expect(warnings[0]?.error).to.include('measurements.15')
  })

  it('an unreachable API leaves the local copy in force and never rejects', async () => {
    await writeFileAtomic(file, joinConfig(1))
    configMap.down = true
    await sync().syncOnce()
    expect(await readFile(file, 'utf8')).to.equal(joinConfig(1))
    expect(lines.find((l) => l.level === 'warn')?.error).to.include('ECONNREFUSED')
  })

  it('keeps following after start() until stop()', async () => {
    await writeFileAtomic(file, joinConfig(1))
    const s = new JoinConfigSync({
      configMap,
      file,
      logger: createLogger({ format: 'json', write: () => {} }),
      intervalMs: 20,
    })
    await s.start()
    configMap.text = joinConfig(3)
    const deadline = Date.now() + 5_000
    while ((await readFile(file, 'utf8')) !== joinConfig(3) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20))
    await s.stop()
    expect(await readFile(file, 'utf8')).to.equal(joinConfig(3))
    configMap.text = joinConfig(4)
    await new Promise((r) => setTimeout(r, 100))
    expect(await readFile(file, 'utf8')).to.equal(joinConfig(3))
  })
})
