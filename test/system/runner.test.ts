import { chmod, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import {
  CommandFailedError,
  createRunner,
  runnerWithSignal,
  type CommandFailure,
} from '../../src/lib/system/index.js'
import type { RunOptions } from '../../src/lib/system/runner.js'
import { exitCodeOf, hintOf, renderError } from '../../src/lib/errors/index.js'
import { expect } from '../support/chai.js'
import { withTempDir } from '../support/temp.js'

const NODE = process.execPath

describe('system runner: the one way lib code runs a program', () => {
  const runner = createRunner()

  describe('a program that exits 0 resolves with its output', () => {
    const cases: Record<string, { script: string; opts?: RunOptions; stdout: string; stderr: string }> = {
      'stdout and stderr': {
        script: 'process.stdout.write("out"); process.stderr.write("err")',
        stdout: 'out',
        stderr: 'err',
      },
      'stdin from input (how secrets reach a child)': {
        script: 'process.stdin.pipe(process.stdout)',
        opts: { input: 'secret-on-stdin' },
        stdout: 'secret-on-stdin',
        stderr: '',
      },
      'env replaces the environment': {
        script: 'process.stdout.write(String(process.env.ONLY_THIS))',
        opts: { env: { ONLY_THIS: 'yes' } },
        stdout: 'yes',
        stderr: '',
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(name, async () => {
        expect(await runner.run(NODE, ['-e', tc.script], tc.opts)).to.deep.equal({
          stdout: tc.stdout,
          stderr: tc.stderr,
        })
      })
    }
  })

  describe('every other ending rejects with a CommandFailedError saying how', () => {
    const cases: Record<
      string,
      {
        script: string
        opts?: RunOptions
        want: Pick<CommandFailure, 'exitCode' | 'timedOut' | 'stdout' | 'stderr'>
        message: string
      }
    > = {
      'a non-zero exit, stderr quoted': {
        script: 'process.stdout.write("partial"); process.stderr.write(" it broke\\n"); process.exit(3)',
        want: { exitCode: 3, timedOut: false, stdout: 'partial', stderr: ' it broke\n' },
        message: 'exited with code 3: it broke',
      },
      'a non-zero exit with nothing on stderr': {
        script: 'process.exit(1)',
        want: { exitCode: 1, timedOut: false, stdout: '', stderr: '' },
        message: 'exited with code 1',
      },
      'a signal': {
        script: 'process.kill(process.pid, "SIGKILL")',
        want: { exitCode: null, timedOut: false, stdout: '', stderr: '' },
        message: 'was killed',
      },
      'running past timeoutMs': {
        script: 'setTimeout(() => {}, 60_000)',
        opts: { timeoutMs: 300 },
        want: { exitCode: null, timedOut: true, stdout: '', stderr: '' },
        message: 'was killed at its time limit',
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(name, async () => {
        const args = ['-e', tc.script]
        const err = await runner.run(NODE, args, tc.opts).then(
          () => expect.fail('resolved'),
          (e: unknown) => e,
        )
        expect(err).to.be.instanceOf(CommandFailedError)
        const failure = err as CommandFailedError
        expect(failure).to.include({ command: NODE, ...tc.want })
        expect(failure.args).to.deep.equal(args)
        expect(failure.message).to.equal(`${[NODE, ...args].join(' ')} ${tc.message}`)
      })
    }

    it('quotes only the tail of a long stderr', async () => {
      const script = 'process.stderr.write("x".repeat(10_000) + "END"); process.exit(1)'
      const err = (await runner.run(NODE, ['-e', script]).catch((e: unknown) => e)) as CommandFailedError
      expect(err.stderr).to.have.length(10_003)
      expect(err.message).to.match(/x{1997}END$/)
      expect(err.message.length).to.be.below(2_000 + 200)
    })
  })

  describe('a program that cannot start', () => {
    const cases: Record<string, { make: (dir: string) => Promise<string>; why: string; code: string }> = {
      missing: { make: async (dir) => path.join(dir, 'nope'), why: 'no such program', code: 'ENOENT' },
      'not executable': {
        make: async (dir) => {
          const file = path.join(dir, 'plain')
          await writeFile(file, '#!/bin/sh\n')
          await chmod(file, 0o644) // no execute bit: refused even to root
          return file
        },
        why: 'not executable',
        code: 'EACCES',
      },
    }
    for (const [name, tc] of Object.entries(cases)) {
      it(`${name}: says so, keeps the system error as the cause`, async () => {
        await withTempDir(async (dir) => {
          const file = await tc.make(dir)
          const err = (await runner.run(file, ['a']).catch((e: unknown) => e)) as CommandFailedError
          expect(err).to.be.instanceOf(CommandFailedError)
          expect(err).to.include({ exitCode: undefined, timedOut: false, stderr: tc.why })
          expect(err.message).to.equal(`${file} a could not be started: ${tc.why}`)
          expect((err.cause as NodeJS.ErrnoException).code).to.equal(tc.code)
        })
      })
    }
  })

  describe('ownSession: a program in a session of its own (mmdebstrap)', () => {
    // the program starts a grandchild and says its pid; the abort must reach both
    const script = (pidFile: string) =>
      `sleep 300 & echo $! > ${pidFile}; echo "$(ps -o sid= -p $$) $$" >> ${pidFile}; wait`
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    }
    async function started(pidFile: string) {
      for (let i = 0; i < 200; i++) {
        const lines = await readFile(pidFile, 'utf8').then(
          (t) => t.trim().split('\n'),
          () => [],
        )
        if (lines.length === 2) {
          const [sid, pid] = lines[1]!.trim().split(/\s+/).map(Number)
          return { grandchild: Number(lines[0]), sid: sid!, pid: pid! }
        }
        await new Promise((r) => setTimeout(r, 25))
      }
      throw new Error('the program never wrote its pids')
    }

    it('leads its own session, and an abort ends its whole group (grandchildren too)', async () => {
      await withTempDir(async (dir) => {
        const pidFile = path.join(dir, 'pids')
        const stop = new AbortController()
        const run = runner.run('sh', ['-c', script(pidFile)], { ownSession: true, signal: stop.signal })
        const { grandchild, sid, pid } = await started(pidFile)
        expect(sid, 'the session is its own, not this process group').to.equal(pid)
        expect(alive(grandchild)).to.equal(true)
        stop.abort('SIGINT')
        const err = (await run.catch((e: unknown) => e)) as CommandFailedError
        expect(err).to.be.instanceOf(CommandFailedError)
        expect(err.exitCode).to.equal(null)
        for (let i = 0; i < 100 && alive(grandchild); i++) await new Promise((r) => setTimeout(r, 20))
        expect(alive(grandchild), 'the grandchild was ended with its group').to.equal(false)
      })
    })

    it('an abort before it starts ends it at once', async () => {
      const stop = new AbortController()
      stop.abort('SIGINT')
      const err = (await runner
        .run('sleep', ['300'], { ownSession: true, signal: stop.signal })
        .catch((e: unknown) => e)) as CommandFailedError
      expect(err).to.be.instanceOf(CommandFailedError)
      expect(err.exitCode).to.equal(null)
    })
  })

  it('runnerWithSignal puts its signal on every run', async () => {
    const stop = new AbortController()
    const bound = runnerWithSignal(runner, stop.signal)
    const run = bound.run('sleep', ['300'])
    stop.abort('SIGINT')
    await expect(run).to.be.rejectedWith(CommandFailedError)
    expect(runnerWithSignal(runner, undefined)).to.equal(runner)
  })

  it('a caller can tell the same failure in its own words', () => {
    const failure: CommandFailure = {
      command: 'tool',
      args: ['x'],
      exitCode: 2,
      stdout: 'o',
      stderr: 'e',
      timedOut: false,
    }
    const original = new CommandFailedError(failure)
    const reworded = new CommandFailedError(original, { message: 'tool x said no' })
    expect(original.message).to.equal('tool x exited with code 2: e')
    expect(reworded.message).to.equal('tool x said no')
    expect(reworded).to.include({ command: 'tool', exitCode: 2, stdout: 'o', stderr: 'e', timedOut: false })
    expect(reworded.cause).to.equal(undefined)
  })
})

describe('system runner: a program that fails is the outside world, not a bug', () => {
  const runner = createRunner()
  const cases: Record<string, { file: string; args: string[]; hint?: RegExp }> = {
    'a program that is not installed (blkid on a PATH without /usr/sbin)': {
      file: 'constellation-no-such-program',
      args: ['--probe'],
      hint: /install constellation-no-such-program, or put the folder that holds it on PATH/,
    },
    'a program that exits 1': { file: NODE, args: ['-e', 'process.exit(1)'] },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`${name}: exit 1, never "This is a bug" (70)`, async () => {
      const err = await runner.run(tc.file, tc.args).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(CommandFailedError)
      expect(exitCodeOf(err)).to.equal(1)
      expect(renderError(err).lines.join('\n')).to.not.contain('This is a bug')
      if (tc.hint) expect(hintOf(err)).to.match(tc.hint)
    })
})
