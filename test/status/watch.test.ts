/**
 * `status --watch`: the status again and again until Ctrl-C. On a terminal each round redraws the
 * last in place; anywhere else a new table is printed only when something changed.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { watchStatus } from '../../src/lib/status/index.js'
import { type WatchFrame } from '../../src/lib/status/watch.js'
import { inPlace } from '../../src/lib/ui/index.js'
import { expect } from '../support/chai.js'
import { spawnCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { freePort } from '../support/ports.js'
import { runCliOnTerminal } from '../support/terminal.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

describe('watchStatus', () => {
  /** Rounds that read `texts` in turn; the last round aborts. */
  async function frames(texts: string[], onlyChanges: boolean): Promise<WatchFrame[]> {
    const stop = new AbortController()
    const seen: WatchFrame[] = []
    let i = 0
    await watchStatus({
      read: async () => {
        const text = texts[i++] ?? ''
        if (i >= texts.length) stop.abort()
        return text
      },
      intervalMs: 2_000,
      onlyChanges,
      signal: stop.signal,
      sleep: async () => {},
      now: () => new Date('2026-01-02T03:04:05Z'),
      show: (frame) => void seen.push(frame),
    })
    return seen
  }

  it('not on a terminal: a table only when it changed', async () => {
    const seen = await frames(['A', 'A', 'B', 'B', 'A'], true)
    expect(seen.map((f) => f.text)).to.deep.equal(['A', 'B', 'A'])
  })

  it('on a terminal: every round, to redraw its clock', async () => {
    const seen = await frames(['A', 'A', 'B'], false)
    expect(seen.map((f) => f.text)).to.deep.equal(['A', 'A', 'B'])
    expect(seen[0]?.at.toISOString()).to.equal('2026-01-02T03:04:05.000Z')
  })

  it('a round that fails is shown, and the watch goes on', async () => {
    const stop = new AbortController()
    const seen: string[] = []
    let round = 0
    await watchStatus({
      read: async () => {
        if (++round === 1) throw new Error('reading config: gone')
        stop.abort()
        return 'A'
      },
      intervalMs: 2_000,
      onlyChanges: true,
      signal: stop.signal,
      sleep: async () => {},
      show: (frame) => void seen.push(frame.text),
    })
    expect(seen).to.deep.equal(['status failed: reading config: gone', 'A'])
  })
})

describe('inPlace: a redraw that replaces the last frame', () => {
  it('moves up over every line the last frame took, wrapped lines counted, and clears from there', () => {
    let out = ''
    const draw = inPlace(
      (text) => (out += text),
      () => 10,
    )
    draw('one\ntwo')
    expect(out).to.equal('one\ntwo\n')
    out = ''
    draw(`${'x'.repeat(25)}\nend`) // 25 columns on a 10-column terminal: 3 rows
    expect(out).to.equal(`\u001b[2A\u001b[J${'x'.repeat(25)}\nend\n`)
    out = ''
    draw('short')
    expect(out).to.equal('\u001b[4A\u001b[Jshort\n')
  })
})

describe('constellation status --watch (CLI)', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let ws: string
  beforeEach(async () => {
    tmp = await makeTempDir()
    ws = path.join(tmp.dir, 'ws')
    const closed = await freePort()
    await generateWorkspace({
      workspace: ws,
      provider: 'qemu',
      kubernetes: 'v1.31',
      variant: 'qemu-vtpm',
      name: 'constell',
      endpoint: `127.0.0.1:${closed}`,
    })
    await writeFile(
      path.join(ws, 'constellation-admin.conf'),
      `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:${closed}" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`,
    )
  })
  afterEach(async () => tmp.cleanup())

  it('piped: one table while nothing changes, and Ctrl-C exits 130 saying nothing changed', async () => {
    const run = spawnCli(['status', '-C', ws, '--watch', '--interval', '0.2s', '--verify-port', '1'])
    await eventually('the first table', async () => (run.stdout().includes('NOT healthy') ? true : undefined))
    // several rounds pass; the same cluster is not printed again
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    run.child.kill('SIGINT')
    const res = await run.result
    expect(res.code, res.stderr).to.equal(130)
    expect(res.stdout.match(/NOT healthy/g)).to.have.length(1)
    expect(res.stderr).to.contain('status interrupted: nothing was changed')
  })

  it('on a terminal: redrawn under a header until Ctrl-C (130)', async () => {
    const res = await runCliOnTerminal(
      ['status', '-C', ws, '--watch', '--interval', '0.2s', '--verify-port', '1'],
      process.env,
      { when: 'NOT healthy', keys: '\u0003' },
    )
    expect(res.code, res.output).to.equal(130)
    expect(res.output).to.match(/Every 0\.2s: constellation status/)
    expect(res.output).to.contain('status interrupted: nothing was changed')
  })
})
