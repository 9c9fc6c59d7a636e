import { CommandFailedError, type CommandFailure } from '../../src/lib/system/index.js'
import { helmSaidUnreachable, inHelmWords } from '../../src/lib/helm/binary/helm-failure.js'
import { expect } from '../support/chai.js'

const failure = (f: Partial<CommandFailure>): CommandFailedError =>
  new CommandFailedError({
    command: '/opt/helm',
    args: ['list', '-o', 'json'],
    exitCode: 1,
    stdout: '',
    stderr: '',
    timedOut: false,
    ...f,
  })

describe("upgrade: helm's reading of the runner's CommandFailedError", () => {
  const cases: Record<string, { f: Partial<CommandFailure>; message: string; unreachable: boolean }> = {
    'exit code and stderr': {
      f: { stderr: 'Error: boom\n' },
      message: 'helm list exited with code 1: Error: boom',
      unreachable: false,
    },
    'stdout when stderr is empty': {
      f: { stdout: 'only here' },
      message: 'helm list exited with code 1: only here',
      unreachable: false,
    },
    'nothing said': { f: {}, message: 'helm list exited with code 1', unreachable: false },
    'a signal': { f: { exitCode: null }, message: 'helm list exited with code signal', unreachable: false },
    'the last five lines, control characters escaped': {
      f: { stderr: 'l1\nl2\nl3\nl4\nl5\nl6\x1b[2J' },
      message: 'helm list exited with code 1: l2\nl3\nl4\nl5\nl6\\x1b[2J',
      unreachable: false,
    },
    'get and show name their subcommand': {
      f: { args: ['get', 'values', 'cilium'] },
      message: 'helm get values exited with code 1',
      unreachable: false,
    },
    'killed at its bound': {
      f: { exitCode: null, timedOut: true, stderr: 'waiting' },
      message: 'helm list did not finish within 3 s and was stopped; it said: waiting',
      unreachable: false,
    },
    'a kubeconfig helm cannot load is the file, not the cluster': {
      f: {
        stderr:
          'Error: kubernetes cluster unreachable: error loading config file "bad.conf": yaml: line 1: did not find expected \',\'',
      },
      message:
        'helm list exited with code 1: Error: kubernetes cluster unreachable: error loading config file "bad.conf": yaml: line 1: did not find expected \',\'',
      unreachable: false,
    },
    'helm blamed the cluster': {
      f: { stderr: 'Error: Kubernetes cluster unreachable: dial tcp' },
      message: 'helm list exited with code 1: Error: Kubernetes cluster unreachable: dial tcp',
      unreachable: true,
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const err = inHelmWords(failure(tc.f), 3_000)
      expect(err).to.be.instanceOf(CommandFailedError)
      expect((err as CommandFailedError).message).to.equal(tc.message)
      expect((err as CommandFailedError).timedOut).to.equal(tc.f.timedOut ?? false)
      expect(helmSaidUnreachable(err)).to.equal(tc.unreachable)
    })
  }

  it('a helm that never started, and any other error, pass unchanged', () => {
    const notStarted = failure({ exitCode: undefined, stderr: 'no such program' })
    const other = new Error('x')
    expect(inHelmWords(notStarted, 1)).to.equal(notStarted)
    expect(inHelmWords(other, 1)).to.equal(other)
    expect(helmSaidUnreachable(other)).to.equal(false)
  })
})
